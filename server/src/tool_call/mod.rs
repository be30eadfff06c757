//! A tool call, from whichever surface (SPEC §5, §8, §9): an app's bridge, the playground,
//! the host's opening call, an MCP client on `/mcp`. Every surface decides and records a call
//! here, and nowhere else: the policy decision with the capability ceiling and the
//! token-session rule, the approval an `ask` decision waits for, the person's rate, the
//! upstream call, the audit row, and what the caller is told. The routes only read the
//! request and shape the answer.

use std::collections::HashSet;
use std::sync::Mutex;

use app::apps::ssr::approval_store::{self, Spent};
use app::apps::ssr::approvals::{Binding, Unverified, Verified, verify_at};
use app::audit::ssr::event::{ApprovedCall, ToolCallRow};
use app::audit::ssr::writer::{self, Actor, AuditEvent};
use app::entitlements::policy::{Decision, Surface};
use app::servers::ssr::canonical::{canonical_json, sha256_hex};
use app::servers::ssr::client::{Hub, ProgressSink, ToolAnswer};
use app::servers::ssr::failure::upstream_failure;
use app::servers::ssr::registry::ServerRow;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::state::ServerState;

mod told;

pub use told::{CallError, refusal_message};

/// Who calls: a person, and for `/mcp` the login token they call with.
#[derive(Clone, Debug)]
pub struct Caller {
    pub user_id: Uuid,
    pub email: String,
    pub token_id: Option<Uuid>,
    /// `approvals::session_binding` of the browser session calling, which an approval must
    /// have been minted in (SPEC §8); `None` on `/mcp`, where nothing is asked.
    pub session_binding: Option<String>,
}

impl Caller {
    fn actor(&self) -> Actor {
        Actor::person(self.user_id, &self.email)
    }
}

/// One call of `tool` of `slug` from `surface`.
pub struct ToolCall {
    pub surface: Surface,
    pub slug: String,
    pub tool: String,
    pub arguments: Map<String, Value>,
    /// The size of the request that carried it, for the audit row.
    pub bytes_in: usize,
    /// The person's approval of this very call, when its decision is `Ask` (SPEC §8).
    pub approval: Option<String>,
}

/// Why an approval let nothing run (403 each, SPEC §8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ApprovalRefused {
    /// Malformed, forged, or minted for another call, person or browser session.
    DoesNotMatch,
    Expired,
    /// Spent by an earlier call (a replay, or a second tab).
    AlreadyUsed,
}

impl ApprovalRefused {
    /// The outcome of the refused call's audit row.
    fn outcome(self) -> &'static str {
        match self {
            ApprovalRefused::DoesNotMatch => "refused: approval does not match",
            ApprovalRefused::Expired => "refused: approval expired",
            ApprovalRefused::AlreadyUsed => "refused: approval already used",
        }
    }

    /// Refuses the call: the refused call's audit row, its count, and what the caller is told.
    async fn refuse(
        self,
        state: &ServerState,
        event: &impl Fn(String, usize) -> writer::Event,
    ) -> CallError {
        refuse(state, event(self.outcome().into(), 0)).await;
        app::metrics::approval(app::metrics::Approval::Refused);
        self.error()
    }

    fn error(self) -> CallError {
        CallError::Refused(
            match self {
                ApprovalRefused::DoesNotMatch => "This approval does not match this call.",
                ApprovalRefused::Expired => "This approval has expired; approve the call again.",
                ApprovalRefused::AlreadyUsed => "This approval was already used.",
            }
            .into(),
        )
    }
}

/// The people whose last console call was over their rate: only the first refusal of a
/// burst is audited, so a flood cannot flood the audit log.
#[derive(Default)]
pub struct Bursts(Mutex<HashSet<Uuid>>);

/// People remembered at once; past it the set starts over (a few bursts audited twice).
const BURSTS_MAX: usize = 100_000;

impl Bursts {
    /// Whether a refusal of `person` starts a burst.
    fn starts(&self, person: Uuid) -> bool {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() >= BURSTS_MAX {
            held.clear();
        }
        held.insert(person)
    }

    fn ends(&self, person: Uuid) {
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if !held.is_empty() {
            held.remove(&person);
        }
    }
}

impl ToolCall {
    /// Runs the call for `caller` on `server` (to which they are entitled), under
    /// `decision` (`Memos::decision` for this surface, slug and tool) and with upstream
    /// sessions of `hub`. The server's progress goes to `progress`; when `cancelled`
    /// resolves first the upstream call is dropped, which cancels it there. Whatever
    /// happens, one audit row says so, and `strad_tool_calls_total` counts it; a result is
    /// answered only once its row is committed.
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        &self,
        state: &ServerState,
        caller: &Caller,
        server: &ServerRow,
        decision: Decision,
        hub: &Hub,
        progress: Option<ProgressSink>,
        cancelled: impl Future<Output = ()>,
    ) -> Result<ToolAnswer, CallError> {
        let ran = self
            .audited(state, caller, server, decision, hub, progress, cancelled)
            .await;
        crate::metrics::tool_call(self.surface, &server.slug, &ran);
        ran
    }

    #[allow(clippy::too_many_arguments)]
    async fn audited(
        &self,
        state: &ServerState,
        caller: &Caller,
        server: &ServerRow,
        decision: Decision,
        hub: &Hub,
        progress: Option<ProgressSink>,
        cancelled: impl Future<Output = ()>,
    ) -> Result<ToolAnswer, CallError> {
        let digest = sha256_hex(canonical_json(&Value::Object(self.arguments.clone())).as_bytes());
        let event = |outcome: String, bytes_out: usize| writer::Event {
            actor: caller.actor(),
            event: AuditEvent::ToolCall(ToolCallRow {
                surface: self.surface,
                tool: self.tool.clone(),
                arguments_sha256: digest.clone(),
                outcome,
                bytes_in: self.bytes_in,
                bytes_out,
                token_id: caller.token_id,
                reference: None,
            }),
            slug: Some(self.slug.clone()),
        };
        let approval = match decision {
            Decision::Run => None,
            Decision::Ask => Some(self.approved(state, caller, &digest, &event).await?),
            Decision::Refuse(_) => {
                let refused = event(format!("refused: {decision:?}"), 0);
                refuse(state, refused).await;
                return Err(CallError::Refused(refusal_message(self.surface, decision)));
            }
        };
        // `/mcp` has its own request rate, per person, in front of everything it answers.
        if self.surface != Surface::McpClient {
            if !state.call_rates.allow(caller.user_id) {
                if state.call_bursts.starts(caller.user_id) {
                    let refused = event("refused: rate".into(), 0);
                    if let Err(error) = state.audit.append(refused).await {
                        tracing::error!(error.message = %error, "could not audit a refused call");
                    }
                }
                return Err(CallError::TooMany);
            }
            state.call_bursts.ends(caller.user_id);
        }
        // Spent only once the call is sure to be made, so a call refused for its rate
        // leaves the approval for the retry.
        if let Some(approval) = approval {
            self.spend(state, caller, &digest, &approval, &event)
                .await?;
        }
        let Some(endpoint) = server.endpoint() else {
            return Err(self
                .failed(state, caller, &event, "the server has no endpoint")
                .await);
        };
        let running = state.audit.running();
        let call = hub.call_tool_reporting(
            &self.slug,
            &endpoint,
            &self.tool,
            self.arguments.clone(),
            progress,
        );
        let result = tokio::select! {
            result = call => Some(result),
            () = cancelled => None,
        };
        let Some(result) = result else {
            let _ = running.append(event("cancelled".into(), 0)).await;
            return Err(CallError::Cancelled);
        };
        match result {
            Ok(answer) => {
                if let Err(error) = running.append(event("ok".into(), answer.json.len())).await {
                    tracing::error!(error.message = %error, "could not audit a tool call");
                    return Err(CallError::NotRecorded);
                }
                Ok(answer)
            }
            Err(error) => {
                drop(running);
                Err(self.failed(state, caller, &event, &error.to_string()).await)
            }
        }
    }

    /// The person's approval of this call, when its decision is `Ask`: verified against the
    /// call as asked (person, browser session, slug, tool, arguments), or nothing runs and
    /// the refused call's row says why.
    async fn approved(
        &self,
        state: &ServerState,
        caller: &Caller,
        digest: &str,
        event: &impl Fn(String, usize) -> writer::Event,
    ) -> Result<Verified, CallError> {
        let Some(token) = &self.approval else {
            refuse(state, event("refused: awaiting approval".into(), 0)).await;
            return Err(CallError::NeedsApproval);
        };
        // Only a browser session approves; a caller without one matches no approval.
        let verified = match &caller.session_binding {
            None => Err(Unverified::Mismatch),
            Some(session) => {
                let binding = Binding {
                    person: caller.user_id,
                    session: session.clone(),
                    slug: self.slug.clone(),
                    tool: self.tool.clone(),
                    arguments_sha256: digest.to_owned(),
                };
                verify_at(&state.approval_secret, token, &binding, unix_now())
            }
        };
        let refused = match verified {
            Ok(verified) => return Ok(verified),
            Err(Unverified::Malformed | Unverified::Mismatch) => ApprovalRefused::DoesNotMatch,
            Err(Unverified::Expired { nonce }) => {
                let expired = writer::Event {
                    actor: caller.actor(),
                    event: AuditEvent::ApprovalExpired {
                        call: ApprovedCall {
                            tool: self.tool.clone(),
                            arguments_sha256: digest.to_owned(),
                        },
                        nonce,
                    },
                    slug: Some(self.slug.clone()),
                };
                refuse(state, expired).await;
                ApprovalRefused::Expired
            }
        };
        Err(refused.refuse(state, event).await)
    }

    /// Spends `approval` (its nonce and its `approval_used` row, committed before the call
    /// is made): a second use of one approval, even at the same moment, runs nothing.
    async fn spend(
        &self,
        state: &ServerState,
        caller: &Caller,
        digest: &str,
        approval: &Verified,
        event: &impl Fn(String, usize) -> writer::Event,
    ) -> Result<(), CallError> {
        let spent = approval_store::spend(
            &state.app.pool,
            caller.user_id,
            &caller.email,
            &self.slug,
            &self.tool,
            digest,
            approval,
        )
        .await;
        match spent {
            Ok(Spent::Now) => Ok(()),
            Ok(Spent::Already) => Err(ApprovalRefused::AlreadyUsed.refuse(state, event).await),
            Err(error) => {
                tracing::error!(error.message = %error, "could not spend an approval");
                Err(CallError::NotRecorded)
            }
        }
    }

    /// A failure upstream: logged and audited with its detail under a fresh reference,
    /// which is all the caller is given.
    async fn failed(
        &self,
        state: &ServerState,
        caller: &Caller,
        event: &impl Fn(String, usize) -> writer::Event,
        detail: &str,
    ) -> CallError {
        let reference = upstream_failure(&self.slug, &self.tool, caller.user_id, detail);
        let mut row = event(format!("error: {detail}"), 0);
        if let AuditEvent::ToolCall(call) = &mut row.event {
            call.reference = Some(reference.clone());
        }
        if let Err(error) = state.audit.append(row).await {
            tracing::error!(error.message = %error, "could not audit a failed call");
        }
        CallError::Upstream { reference }
    }
}

/// Appends the row of a call (or approval) that runs nothing; a failure is logged, and the
/// caller is refused all the same.
async fn refuse(state: &ServerState, row: writer::Event) {
    if let Err(error) = state.audit.append(row).await {
        tracing::error!(error.message = %error, "could not audit a refused call");
    }
}

/// The time approvals are minted and checked at, in unix seconds.
pub fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;

    #[test]
    fn a_burst_is_started_once_and_ended_by_a_call_that_passes() {
        let bursts = Bursts::default();
        let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
        assert!(bursts.starts(alice));
        assert!(!bursts.starts(alice));
        assert!(bursts.starts(bob));
        bursts.ends(alice);
        assert!(bursts.starts(alice));
    }

    #[test]
    fn every_approval_refusal_is_403_with_its_own_message() {
        let refusals = [
            ApprovalRefused::DoesNotMatch,
            ApprovalRefused::Expired,
            ApprovalRefused::AlreadyUsed,
        ];
        let messages: HashSet<String> = refusals.iter().map(|r| r.error().message()).collect();
        assert_eq!(messages.len(), refusals.len());
        for refusal in refusals {
            assert_eq!(refusal.error().status(), StatusCode::FORBIDDEN);
            assert!(refusal.outcome().starts_with("refused: "));
        }
    }
}
