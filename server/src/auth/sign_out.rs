use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use tower_sessions::Session;

use app::audit::ssr::writer::{self, AuditEvent};
use app::auth::ssr::context::RequestContext;

use crate::state::ServerState;

/// POST /auth/sign-out: deletes the session row and its cookie. (A cross-site form cannot
/// sign people out: the write gate refuses it before it gets here.)
pub async fn sign_out(State(state): State<ServerState>, session: Session) -> Response {
    // Who is leaving, for the audit log; an anonymous sign-out records nothing.
    if let Ok(Some(ctx)) = RequestContext::from_session(&state.app.pool, &session).await
        && let Err(err) =
            writer::append_alone(&state.app.pool, &ctx.actor(), &AuditEvent::SignOut, None).await
    {
        tracing::error!(error.message = %err, "could not record the sign-out");
    }
    if let Err(err) = session.flush().await {
        tracing::error!(error.message = %err, "could not delete the session");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    Redirect::to("/sign-in").into_response()
}
