//! `POST /apps/<slug>/approvals` (SPEC §8): the person's answer to the approval the host
//! drew outside the frame for one call. Approve mints the approval the call then carries;
//! decline, and a page that stopped waiting, are recorded. No page can reach it: it takes
//! the console's own JSON requests, from a browser session, under the same decision as the
//! call itself.

use app::apps::ssr::approvals::{Binding, Minted, arguments_sha256, mint_at};
use app::audit::ssr::event::{ApprovedCall, MintedApproval};
use app::audit::ssr::writer::{self, Actor, AuditEvent};
use app::entitlements::policy::{Decision, Surface};
use app::error::AppError;
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tower_sessions::Session;

use super::{Refused, entitled, require_json, session_binding};
use crate::state::ServerState;
use crate::tool_call::{CallError, refusal_message, unix_now};

/// What the person decided in the host's approval panel.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Answer {
    Approve,
    Decline,
    /// The page stopped waiting before the person decided.
    Expired,
}

#[derive(Deserialize)]
struct ApprovalBody {
    tool: String,
    #[serde(default)]
    arguments: Map<String, Value>,
    decision: Answer,
}

pub async fn approvals(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    body: Bytes,
) -> Result<Response, Refused> {
    require_json(&headers)?;
    let (ctx, _server) = entitled(&state, &session, &slug).await?;
    let body: ApprovalBody = serde_json::from_slice(&body).map_err(|_| {
        Refused::Status(
            StatusCode::BAD_REQUEST,
            "The body must be {\"tool\": string, \"arguments\": object, \"decision\": \
             \"approve\" | \"decline\" | \"expired\"}."
                .into(),
        )
    })?;
    // The very decision the call will get: only a call that could run after an approval
    // (or runs without one) can be approved, declined or given up on.
    let pool = &state.app.pool;
    let decision = state
        .memos
        .decision(pool, ctx.session_kind, &slug, &body.tool, Surface::App)
        .await?;
    if !matches!(decision, Decision::Ask | Decision::Run) {
        let message = refusal_message(Surface::App, decision);
        return Err(CallError::Refused(message).into());
    }
    let actor = Actor::person(ctx.user.id, &ctx.user.email);
    let digest = arguments_sha256(&body.arguments);
    let call = ApprovedCall {
        tool: body.tool.clone(),
        arguments_sha256: digest.clone(),
    };
    let (event, answer) = match (body.decision, decision) {
        (Answer::Approve, Decision::Ask) => {
            // Only a browser session approves, and its approval holds in it alone.
            let session = session_binding(&session).ok_or(AppError::Unauthorized)?;
            let binding = Binding {
                person: ctx.user.id,
                session,
                slug: slug.clone(),
                tool: body.tool.clone(),
                arguments_sha256: digest,
            };
            let Minted {
                token,
                nonce,
                expires_at,
            } = mint_at(&state.approval_secret, &binding, unix_now());
            let answer = json!({"approval": token, "expires_at": expires_at});
            let minted = Some(MintedApproval { nonce, expires_at });
            (AuditEvent::ApprovalGranted { call, minted }, answer)
        }
        // A read-only tool pressed as an island action: it runs without an approval.
        (Answer::Approve, _) => (
            AuditEvent::ApprovalGranted { call, minted: None },
            json!({"approval": null}),
        ),
        (Answer::Decline, _) => (AuditEvent::ApprovalDeclined { call }, json!({})),
        (Answer::Expired, _) => (AuditEvent::ApprovalAbandoned { call }, json!({})),
    };
    // Recorded before it is answered: no approval is handed out unaudited.
    writer::append_alone(pool, &actor, &event, Some(&slug)).await?;
    if let AuditEvent::ApprovalGranted {
        minted: Some(_), ..
    } = &event
    {
        app::metrics::approval(app::metrics::Approval::Minted);
    }
    Ok(([(header::CACHE_CONTROL, "no-store")], Json(answer)).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_answers_are_read_and_nothing_else() {
        let read = |text: &str| serde_json::from_str::<Answer>(text).ok();
        assert_eq!(read("\"approve\""), Some(Answer::Approve));
        assert_eq!(read("\"decline\""), Some(Answer::Decline));
        assert_eq!(read("\"expired\""), Some(Answer::Expired));
        assert_eq!(read("\"Approve\""), None);
        assert_eq!(read("\"run\""), None);
    }
}
