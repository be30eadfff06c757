//! What is audited, as types: each event carries what its row records, and turns itself into
//! its kind and its payload. The payloads' field names and value types are those the audit
//! page, the exports and existing rows hold, so each is spelt out here once.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::audit::AuditKind;
use crate::auth::Role;
use crate::entitlements::policy::{Policy, Surface};
use crate::servers::ssr::changes::AppChange;

/// One audited event. Fields that the row leaves out when absent are `Option`s noted so.
#[derive(Clone, Debug, PartialEq)]
pub enum AuditEvent {
    /// Signed in in a browser, through the issuer.
    SignIn {
        issuer: String,
    },
    /// Signed in with a login token.
    TokenSignIn {
        token_id: Uuid,
    },
    SignOut,
    /// `reason` is left out when `None`.
    RoleGranted {
        email: String,
        role: Role,
        reason: Option<String>,
    },
    RoleRevoked {
        email: String,
        role: Role,
    },
    /// A grant to a person (`email`) or a whole `domain`; `reason` is left out when `None`.
    EntitlementGranted {
        grant_id: i64,
        email: Option<String>,
        domain: Option<String>,
        reason: Option<String>,
    },
    EntitlementRevoked {
        grant_id: i64,
        email: Option<String>,
        domain: Option<String>,
    },
    /// `reason` is left out when `None`.
    PolicyChanged {
        old: Policy,
        new: Policy,
        reason: Option<String>,
    },
    ReadOnlyMarked {
        tool: String,
        digest: String,
    },
    ReadOnlyUnmarked {
        tool: String,
        digest: String,
    },
    /// The tool's definition changed from the one marked at `marked_digest`.
    ReadOnlyMarkCleared {
        tool: String,
        marked_digest: String,
    },
    TokenMinted {
        token_id: Uuid,
        name: String,
        /// As the console shows it.
        expires_at: String,
    },
    TokenRevoked {
        token_id: Uuid,
        name: String,
        owner_id: Uuid,
    },
    /// A server's settings as `servers::ssr::form::audit_payload` records them.
    ServerRegistered {
        server: Value,
    },
    /// Settings before and after; `reason` is left out when `None`.
    ServerChanged {
        old: Value,
        new: Value,
        reason: Option<String>,
    },
    LinkHostsChanged {
        before: Vec<String>,
        after: Vec<String>,
    },
    AppChange(AppChange),
    AppPinned(Pin),
    AppRepinned(Pin),
    AppPinRevoked {
        uri: String,
        sha256: String,
    },
    /// `action` and `decision` as the host sent them; `detail` already bounded.
    HostAction {
        action: &'static str,
        decision: &'static str,
        detail: Value,
    },
    /// The person approved; `minted` is the approval handed out, when the tool needed one.
    ApprovalGranted {
        call: ApprovedCall,
        minted: Option<MintedApproval>,
    },
    ApprovalDeclined {
        call: ApprovedCall,
    },
    /// The page stopped waiting before the person decided.
    ApprovalAbandoned {
        call: ApprovedCall,
    },
    /// An approval came back after its time.
    ApprovalExpired {
        call: ApprovedCall,
        nonce: String,
    },
    ApprovalUsed {
        call: ApprovedCall,
        nonce: String,
    },
    /// A login-token session asked to change something.
    WriteRefused {
        method: String,
        path: String,
        token_id: Option<Uuid>,
    },
    ToolCall(ToolCallRow),
}

/// An app resource as pinned.
#[derive(Clone, Debug, PartialEq)]
pub struct Pin {
    pub uri: String,
    pub sha256: String,
    pub size: i64,
    pub server_fingerprint: String,
}

/// The call an approval is about.
#[derive(Clone, Debug, PartialEq)]
pub struct ApprovedCall {
    pub tool: String,
    pub arguments_sha256: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MintedApproval {
    pub nonce: String,
    /// Unix seconds.
    pub expires_at: i64,
}

/// One tool call, whatever its outcome; the surface names its kind.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRow {
    pub surface: Surface,
    pub tool: String,
    pub arguments_sha256: String,
    /// `ok`, `cancelled`, `refused: …` or `error: …`.
    pub outcome: String,
    pub bytes_in: usize,
    pub bytes_out: usize,
    /// The login token of an MCP client; left out when `None`.
    pub token_id: Option<Uuid>,
    /// The reference the caller was given for an upstream failure; left out when `None`.
    pub reference: Option<String>,
}

impl AuditEvent {
    pub fn kind(&self) -> AuditKind {
        use AuditEvent as E;
        match self {
            E::SignIn { .. } | E::TokenSignIn { .. } => AuditKind::SignIn,
            E::SignOut => AuditKind::SignOut,
            E::RoleGranted { .. } => AuditKind::RoleGranted,
            E::RoleRevoked { .. } => AuditKind::RoleRevoked,
            E::EntitlementGranted { .. } => AuditKind::EntitlementGranted,
            E::EntitlementRevoked { .. } => AuditKind::EntitlementRevoked,
            E::PolicyChanged { .. } => AuditKind::PolicyChanged,
            E::ReadOnlyMarked { .. } => AuditKind::ReadOnlyMarked,
            E::ReadOnlyUnmarked { .. } => AuditKind::ReadOnlyUnmarked,
            E::ReadOnlyMarkCleared { .. } => AuditKind::ReadOnlyMarkCleared,
            E::TokenMinted { .. } => AuditKind::TokenMinted,
            E::TokenRevoked { .. } => AuditKind::TokenRevoked,
            E::ServerRegistered { .. } => AuditKind::ServerRegistered,
            E::ServerChanged { .. } => AuditKind::ServerChanged,
            E::LinkHostsChanged { .. } => AuditKind::LinkHostsChanged,
            E::AppChange(_) => AuditKind::AppChange,
            E::AppPinned(_) => AuditKind::AppPinned,
            E::AppRepinned(_) => AuditKind::AppRepinned,
            E::AppPinRevoked { .. } => AuditKind::AppPinRevoked,
            E::HostAction { .. } => AuditKind::HostAction,
            E::ApprovalGranted { .. } => AuditKind::ApprovalGranted,
            E::ApprovalDeclined { .. } => AuditKind::ApprovalDeclined,
            E::ApprovalAbandoned { .. } | E::ApprovalExpired { .. } => AuditKind::ApprovalExpired,
            E::ApprovalUsed { .. } => AuditKind::ApprovalUsed,
            E::WriteRefused { .. } => AuditKind::WriteRefused,
            E::ToolCall(call) => call.surface.audit_kind(),
        }
    }

    /// The row's payload.
    pub fn payload(&self) -> Value {
        use AuditEvent as E;
        match self {
            E::SignIn { issuer } => json!({"issuer": issuer, "via": "browser"}),
            E::TokenSignIn { token_id } => json!({"via": "login token", "token_id": token_id}),
            E::SignOut => json!({}),
            E::RoleGranted {
                email,
                role,
                reason,
            } => with_reason(json!({"email": email, "role": role.as_str()}), reason),
            E::RoleRevoked { email, role } => json!({"email": email, "role": role.as_str()}),
            E::EntitlementGranted {
                grant_id,
                email,
                domain,
                reason,
            } => with_reason(
                json!({"grant_id": grant_id, "email": email, "domain": domain}),
                reason,
            ),
            E::EntitlementRevoked {
                grant_id,
                email,
                domain,
            } => json!({"grant_id": grant_id, "email": email, "domain": domain}),
            E::PolicyChanged { old, new, reason } => {
                with_reason(json!({"old": old, "new": new}), reason)
            }
            E::ReadOnlyMarked { tool, digest } | E::ReadOnlyUnmarked { tool, digest } => {
                json!({"tool": tool, "digest": digest})
            }
            E::ReadOnlyMarkCleared {
                tool,
                marked_digest,
            } => json!({"tool": tool, "marked_digest": marked_digest,
                "reason": "the tool's definition changed"}),
            E::TokenMinted {
                token_id,
                name,
                expires_at,
            } => json!({"token_id": token_id, "name": name, "expires_at": expires_at}),
            E::TokenRevoked {
                token_id,
                name,
                owner_id,
            } => json!({"token_id": token_id, "name": name, "owner_id": owner_id}),
            E::ServerRegistered { server } => server.clone(),
            E::ServerChanged { old, new, reason } => {
                with_reason(json!({"old": old, "new": new}), reason)
            }
            E::LinkHostsChanged { before, after } => json!({"before": before, "after": after}),
            E::AppChange(change) => serde_json::to_value(change).unwrap_or(Value::Null),
            E::AppPinned(pin) | E::AppRepinned(pin) => json!({"uri": pin.uri,
                "sha256": pin.sha256, "size": pin.size,
                "server_fingerprint": pin.server_fingerprint}),
            E::AppPinRevoked { uri, sha256 } => json!({"uri": uri, "sha256": sha256}),
            E::HostAction {
                action,
                decision,
                detail,
            } => json!({"action": action, "decision": decision, "detail": detail}),
            E::ApprovalGranted { call, minted } => {
                let mut payload = call.payload();
                if let Some(minted) = minted {
                    payload["nonce"] = json!(minted.nonce);
                    payload["expires_at"] = json!(minted.expires_at);
                }
                payload
            }
            E::ApprovalDeclined { call } => call.payload(),
            E::ApprovalAbandoned { call } => {
                let mut payload = call.payload();
                payload["reason"] = json!("the app stopped waiting");
                payload
            }
            E::ApprovalExpired { call, nonce } | E::ApprovalUsed { call, nonce } => {
                let mut payload = call.payload();
                payload["nonce"] = json!(nonce);
                payload
            }
            E::WriteRefused {
                method,
                path,
                token_id,
            } => json!({"method": method, "path": path, "reason": "token session",
                "token_id": token_id}),
            E::ToolCall(call) => {
                let mut payload = json!({"tool": call.tool,
                    "arguments_sha256": call.arguments_sha256, "outcome": call.outcome,
                    "bytes_in": call.bytes_in, "bytes_out": call.bytes_out,
                    "surface": call.surface.as_str()});
                if let Some(token) = call.token_id {
                    payload["token_id"] = json!(token);
                }
                if let Some(reference) = &call.reference {
                    payload["reference"] = json!(reference);
                }
                payload
            }
        }
    }
}

impl ApprovedCall {
    fn payload(&self) -> Value {
        json!({"tool": self.tool, "arguments_sha256": self.arguments_sha256})
    }
}

/// `payload` with `"reason"` added when there is one.
fn with_reason(mut payload: Value, reason: &Option<String>) -> Value {
    if let Some(reason) = reason {
        payload["reason"] = json!(reason);
    }
    payload
}

#[cfg(test)]
mod tests;
