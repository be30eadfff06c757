//! The gate of every `/mcp` request: the login token, its owner's rates, and the session
//! it names.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{Caller, Front, fast};

fn unauthorized(message: &str) -> Response {
    let mut response = (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"error": message})),
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(
            "Bearer realm=\"strad\", error=\"invalid_token\", error_description=\"a login token from /tokens is required\"",
        ),
    );
    response
}

/// A refusal the client may retry after `retry_after` seconds.
fn retry_later(status: StatusCode, message: &str, retry_after: &'static str) -> Response {
    let mut response = (status, axum::Json(json!({"error": message}))).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static(retry_after));
    response
}

/// Every `/mcp` request: a valid login token as a Bearer header, within its owner's rate. A plain
/// `tools/call` in an open session is then answered here (`fast.rs`); everything else by
/// rmcp's Streamable HTTP server.
pub(super) async fn authenticate(
    State(front): State<Arc<Front>>,
    request: Request,
    next: Next,
) -> Response {
    let state = &*front.relay.state;
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .map(str::to_owned);
    let Some(token) = token else {
        return unauthorized("Send a login token as `Authorization: Bearer strad_…`.");
    };
    let pool = &state.app.pool;
    let crate::authority_cache::TokenOwner {
        token_id,
        user,
        roles,
        ..
    } = match state.memos.token(pool, &token).await {
        Ok(Some(owner)) => owner,
        Ok(None) => return unauthorized("This login token is unknown, expired or revoked."),
        Err(error) => {
            tracing::error!(error.message = %error, "could not check a login token");
            return (StatusCode::SERVICE_UNAVAILABLE, "try again").into_response();
        }
    };
    // Limited by person, not by token: minting more tokens buys no more requests.
    if !state.mcp_rates.allow(user.id) {
        return retry_later(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests from your login tokens; slow down.",
            "1",
        );
    }
    // A request without a session id opens a client session (it must be `initialize`).
    let opens_session = request.method() == axum::http::Method::POST
        && !request.headers().contains_key("mcp-session-id");
    if opens_session && !state.mcp_sessions.allow(user.id) {
        return retry_later(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many new sessions from your login tokens; reuse a session, or end the ones you no longer need.",
            "6",
        );
    }
    if opens_session && !state.mcp_open.has_room() {
        return retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            "strad holds as many MCP sessions as it may; try again shortly.",
            "30",
        );
    }
    // A session is its opener's: the first request to name it binds it to that request's
    // token (only the opener has seen its id), and another token naming it hears what an
    // unknown session hears.
    let open = state.mcp_open.named_by(request.headers());
    if open.as_ref().is_some_and(|open| !open.belongs_to(token_id)) {
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let caller = Caller {
        token_id,
        ctx: app::auth::ssr::context::RequestContext {
            user,
            roles,
            session_kind: app::auth::ssr::session::SessionKind::Browser,
        },
    };
    let answered = fast::answer(&front.gate, &front.relay, &caller, open, request).await;
    let mut request = match answered {
        Ok(answered) => return answered,
        Err(request) => request,
    };
    request.extensions_mut().insert(caller);
    let ends_session = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    // rmcp answers a session's end with 202. The SDKs' own servers answer 200, and the
    // Python SDK's client reports any status but 200 or 204 as a failed end.
    if ends_session && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}
