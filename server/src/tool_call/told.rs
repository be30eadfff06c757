//! What the caller of a tool call is told when it does not get the server's result: the
//! status and the message of each way a call ends short, and of each refusal.

use app::entitlements::policy::{Decision, Refusal, Surface};
use axum::http::StatusCode;

/// Why a call did not answer with the server's result. `message` is what the caller may
/// read: never an upstream server's own words (those go to the log and to the audit row,
/// under the reference the caller is given).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// The decision refused it (403).
    Refused(String),
    /// A writing tool under `ask`, called without an approval: the host asks the person
    /// (428), and nothing runs until they approve.
    NeedsApproval,
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
            CallError::NeedsApproval => StatusCode::PRECONDITION_REQUIRED,
            CallError::TooMany => StatusCode::TOO_MANY_REQUESTS,
            CallError::NotRecorded => StatusCode::SERVICE_UNAVAILABLE,
            CallError::Upstream { .. } => StatusCode::BAD_GATEWAY,
            CallError::Cancelled => StatusCode::REQUEST_TIMEOUT,
        }
    }

    pub fn message(&self) -> String {
        match self {
            CallError::Refused(message) => message.clone(),
            CallError::NeedsApproval => refusal_message(Surface::App, Decision::Ask),
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
        (Decision::Ask, _) => "This tool changes things: approve it in the console.".into(),
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_call_awaiting_approval_answers_428_and_tells_the_person_to_approve_it() {
        assert_eq!(
            CallError::NeedsApproval.status(),
            StatusCode::PRECONDITION_REQUIRED
        );
        assert_eq!(
            CallError::NeedsApproval.message(),
            "This tool changes things: approve it in the console."
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
