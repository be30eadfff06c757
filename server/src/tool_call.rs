//! A tool call, from whichever surface (SPEC §5, §8, §9): an app's bridge, the playground,
//! the host's opening call, an MCP client on `/mcp`. Every surface decides and records a call
//! here, and nowhere else: the policy decision with the capability ceiling and the
//! token-session rule, the person's rate, the upstream call, the audit row, and what the
//! caller is told. The routes only read the request and shape the answer.

use std::collections::HashSet;
use std::sync::Mutex;

use app::audit::ssr::writer::{self, Actor};
use app::entitlements::policy::{Decision, Refusal, Surface};
use app::servers::ssr::canonical::{canonical_json, sha256_hex};
use app::servers::ssr::client::{Hub, ProgressSink, ToolAnswer};
use app::servers::ssr::failure::upstream_failure;
use app::servers::ssr::registry::ServerRow;
use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::state::ServerState;

/// Who calls: a person, and for `/mcp` the login token they call with.
#[derive(Clone, Debug)]
pub struct Caller {
    pub user_id: Uuid,
    pub email: String,
    pub token_id: Option<Uuid>,
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
}

/// Why a call did not answer with the server's result. `message` is what the caller may
/// read: never an upstream server's own words (those go to the log and to the audit row,
/// under the reference the caller is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The decision refused it (403).
    Refused(String),
    /// The person called faster than their rate (429, retry after a second).
    TooMany,
    /// The call ran, but its audit row could not be committed: its result is withheld (503).
    NotRecorded,
    /// The server failed; the detail is logged and audited under `reference` (502).
    Upstream { reference: String },
    /// The caller cancelled it.
    Cancelled,
}

impl CallError {
    pub fn status(&self) -> StatusCode {
        match self {
            CallError::Refused(_) => StatusCode::FORBIDDEN,
            CallError::TooMany => StatusCode::TOO_MANY_REQUESTS,
            CallError::NotRecorded => StatusCode::SERVICE_UNAVAILABLE,
            CallError::Upstream { .. } => StatusCode::BAD_GATEWAY,
            CallError::Cancelled => StatusCode::REQUEST_TIMEOUT,
        }
    }

    pub fn message(&self) -> String {
        match self {
            CallError::Refused(message) => message.clone(),
            CallError::TooMany => "Too many tool calls at once; slow down.".into(),
            CallError::NotRecorded => "The call could not be recorded.".into(),
            CallError::Upstream { reference } => {
                format!("The server could not run the tool (reference {reference}).")
            }
            CallError::Cancelled => "The request was cancelled.".into(),
        }
    }
}

/// What the caller is told of a refusal.
pub fn refusal_message(surface: Surface, decision: Decision) -> String {
    let from = match surface {
        Surface::App | Surface::Host => "apps",
        Surface::Playground => "the playground",
        Surface::McpClient => "MCP clients",
    };
    match (decision, surface) {
        (Decision::Run, _) => String::new(),
        (Decision::Ask, _) => {
            "This tool changes things; approving it from an app is not available yet.".into()
        }
        (Decision::Refuse(Refusal::TokenSession), _) => {
            "A session opened with a login token cannot call tools.".into()
        }
        (Decision::Refuse(Refusal::NotApproved), _) => {
            format!("This server is not approved for tools from {from}.")
        }
        (Decision::Refuse(Refusal::UnknownTool), _) => "This server has no such tool.".into(),
        (Decision::Refuse(Refusal::NotVisible), Surface::App) => {
            "This tool is not available to apps.".into()
        }
        (Decision::Refuse(Refusal::NotVisible), Surface::McpClient) => {
            "This tool is not available to MCP clients.".into()
        }
        (Decision::Refuse(Refusal::NotVisible), _) => {
            "This tool is for apps only: it is not offered here.".into()
        }
        (Decision::Refuse(Refusal::NotInPolicy), _) => {
            format!("This server's policy does not allow this tool from {from}.")
        }
        (Decision::Refuse(Refusal::WritingDenied), Surface::Host) => {
            "The declaring tool changes things: the app calls it when you ask.".into()
        }
        (Decision::Refuse(Refusal::WritingDenied), _) => {
            "This tool changes things, and this server's policy refuses such calls from apps."
                .into()
        }
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
    /// happens, one audit row says so; a result is answered only once its row is committed.
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
        let digest = sha256_hex(canonical_json(&Value::Object(self.arguments.clone())).as_bytes());
        let event = |outcome: String, bytes_out: usize| {
            let mut payload = json!({"tool": self.tool, "arguments_sha256": digest,
                "outcome": outcome, "bytes_in": self.bytes_in, "bytes_out": bytes_out,
                "surface": self.surface.as_str()});
            if let Some(token) = caller.token_id {
                payload["token_id"] = json!(token);
            }
            writer::Event {
                actor: caller.actor(),
                kind: self.surface.audit_kind(),
                slug: Some(self.slug.clone()),
                payload,
            }
        };
        if decision != Decision::Run {
            if let Err(error) = state
                .audit
                .append(event(format!("refused: {decision:?}"), 0))
                .await
            {
                tracing::error!(error.message = %error, "could not audit a refused call");
            }
            return Err(CallError::Refused(refusal_message(self.surface, decision)));
        }
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
        row.payload["reference"] = json!(reference);
        if let Err(error) = state.audit.append(row).await {
            tracing::error!(error.message = %error, "could not audit a failed call");
        }
        CallError::Upstream { reference }
    }
}

#[cfg(test)]
mod tests {
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
    fn an_upstream_failure_tells_the_caller_a_reference_and_nothing_of_the_server() {
        let error = CallError::Upstream {
            reference: "0123456789ab".into(),
        };
        assert_eq!(error.status(), StatusCode::BAD_GATEWAY);
        assert_eq!(
            error.message(),
            "The server could not run the tool (reference 0123456789ab)."
        );
    }

    #[test]
    fn every_refusal_has_a_message_for_every_surface() {
        for surface in [
            Surface::Playground,
            Surface::App,
            Surface::McpClient,
            Surface::Host,
        ] {
            for refusal in [
                Refusal::TokenSession,
                Refusal::UnknownTool,
                Refusal::NotVisible,
                Refusal::NotInPolicy,
                Refusal::WritingDenied,
                Refusal::NotApproved,
            ] {
                assert!(!refusal_message(surface, Decision::Refuse(refusal)).is_empty());
            }
        }
    }
}
