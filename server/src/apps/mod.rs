//! The app surface's routes that are not pages (SPEC §6, §8), one job a file:
//! - `frame.rs`: the frame, serving a person's pinned copy under its own CSP;
//! - `frame_cache.rs`: pinned apps prepared for the frame, kept in memory;
//! - `calls.rs`: the tool calls of an app's bridge, the playground and the opening call;
//! - `approvals.rs`: the person's answer to the host's approval of a writing tool;
//! - `resources.rs`: an app's `resources/read`, and the read path `download.rs` shares;
//! - `download.rs`: a resource of the app's server the person downloads;
//! - `host_actions.rs`: the audit of what the person answered to a page's ask-first action;
//! - `app_log.rs`: a page's log lines, into strad's log at a person's rate.
//!
//! The JSON routes answer a refusal as `Refused`, the frame as `frame::Stopped`: each turns
//! into its response, so a handler says `?`.

mod app_log;
mod approvals;
mod calls;
mod download;
mod frame;
mod frame_cache;
mod host_actions;
mod resources;

pub use app_log::LINES_PER_SECOND as LOG_LINES_PER_SECOND;
pub use frame::{console_frame, sandbox_frame};
pub use frame_cache::FrameCache;

use std::sync::Arc;

use app::auth::ssr::context::RequestContext;
use app::auth::ssr::session::SessionPerson;
use app::entitlements::ssr::authorize;
use app::error::AppError;
use app::servers::ssr::registry::ServerRow;
use axum::Json;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;
use tower_sessions::Session;

use crate::authority_cache::PersonRow;
use crate::state::ServerState;
use crate::tool_call::CallError;

/// Largest tool-call body accepted from a page (SPEC §6 bridge byte limit).
const CALL_BODY_LIMIT: usize = 256 * 1024;

/// Where an app's frame loads from, on the console's origin or the sandbox origin; no
/// router has it (`frame_loads` answers it before routing).
pub const FRAME_PATH: &str = "/apps/{slug}/frame/{ticket}";

/// The app surface's other routes.
pub fn routes() -> Router<ServerState> {
    let limited = || DefaultBodyLimit::max(CALL_BODY_LIMIT);
    Router::new()
        .route(
            "/apps/{slug}/tools/call",
            post(calls::tools_call).layer(limited()),
        )
        .route(
            "/servers/{slug}/tools/call",
            post(calls::playground_call).layer(limited()),
        )
        .route(
            "/apps/{slug}/resources/read",
            post(resources::resources_read).layer(limited()),
        )
        .route(
            "/apps/{slug}/opening-call",
            post(calls::opening_call).layer(limited()),
        )
        .route(
            "/apps/{slug}/approvals",
            post(approvals::approvals).layer(limited()),
        )
        .route(
            "/apps/{slug}/host-actions",
            post(host_actions::host_actions).layer(limited()),
        )
        .route(
            "/apps/{slug}/download",
            post(download::download).layer(limited()),
        )
        .route("/apps/{slug}/log", post(app_log::app_log).layer(limited()))
}

/// A JSON route's refusal, as a page reads it: `{"error": …}` under its status, never
/// cached.
#[derive(Debug)]
pub enum Refused {
    /// Signed in, entitled, allowed: the console's own answer.
    App(AppError),
    /// A tool call that did not answer with a result.
    Call(CallError),
    /// A writing tool's call waiting for the person's approval (428): what the host shows
    /// them (`calls::approval_details`).
    AwaitingApproval(serde_json::Value),
    /// Anything else, said as it is.
    Status(StatusCode, String),
}

impl From<AppError> for Refused {
    fn from(error: AppError) -> Self {
        Refused::App(error)
    }
}

impl From<sqlx::Error> for Refused {
    fn from(error: sqlx::Error) -> Self {
        Refused::App(error.into())
    }
}

impl From<CallError> for Refused {
    fn from(error: CallError) -> Self {
        Refused::Call(error)
    }
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let (status, message) = match &self {
            Refused::App(error) => (status_of(error), error.to_string()),
            Refused::Call(error) => (error.status(), error.message()),
            Refused::AwaitingApproval(_) => (
                CallError::NeedsApproval.status(),
                CallError::NeedsApproval.message(),
            ),
            Refused::Status(status, message) => (*status, message.clone()),
        };
        let mut body = json!({"error": message});
        if let Refused::AwaitingApproval(details) = &self {
            body["approval"] = details.clone();
        }
        let mut response = (status, Json(body)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if matches!(self, Refused::Call(CallError::TooMany)) {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }
}

fn status_of(error: &AppError) -> StatusCode {
    StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// The first lines of every JSON app route: signed in (401), entitled to `slug` (403, alike
/// for a slug that does not exist).
async fn entitled(
    state: &ServerState,
    session: &Session,
    slug: &str,
) -> Result<(RequestContext, ServerRow), Refused> {
    let pool = &state.app.pool;
    let ctx = RequestContext::from_session(pool, session)
        .await?
        .ok_or(AppError::Unauthorized)?;
    let server = authorize::entitled_server(pool, &ctx, slug).await?;
    Ok((ctx, server))
}

/// The request context of the session's person from their row as just read; a person who
/// no longer exists is signed out (their session cleared).
async fn person_context(
    session: &Session,
    person: SessionPerson,
    user: Result<Option<PersonRow>, sqlx::Error>,
) -> Result<RequestContext, AppError> {
    match user {
        Ok(Some(found)) => {
            let (user, roles) = Arc::unwrap_or_clone(found);
            Ok(RequestContext {
                user,
                roles,
                session_kind: person.kind,
            })
        }
        Ok(None) => {
            let _ = session.flush().await;
            Err(AppError::Unauthorized)
        }
        Err(error) => Err(error.into()),
    }
}

/// The browser session an approval is bound to (`approvals::session_binding` of its id);
/// `None` before the session is loaded or when it has none.
fn session_binding(session: &Session) -> Option<String> {
    let id = session.id()?;
    Some(app::apps::ssr::approvals::session_binding(&id.to_string()))
}

/// A session opened from a login token may look but not act (SPEC §3): refused here too,
/// not only by the write gate in front, so a route never depends on being behind it.
fn browser_session(ctx: &RequestContext) -> Result<(), Refused> {
    if ctx.may_write() {
        Ok(())
    } else {
        Err(Refused::Status(
            StatusCode::FORBIDDEN,
            "A session opened with a login token cannot do this.".into(),
        ))
    }
}

/// A JSON body of the shape `T`, read once the person is known (so a stranger hears 401
/// whatever they sent); else 400 saying `shape`.
fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8], shape: &str) -> Result<T, Refused> {
    serde_json::from_slice(body).map_err(|_| Refused::Status(StatusCode::BAD_REQUEST, shape.into()))
}

/// A cross-site form cannot send `application/json`: it is required of every call from a
/// page (the write gate has already refused any request not from the console).
fn require_json(headers: &HeaderMap) -> Result<(), Refused> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
    if json {
        Ok(())
    } else {
        Err(Refused::Status(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Send application/json.".into(),
        ))
    }
}

/// Runs a route's handler in a task of its own, so that a client going away in the middle
/// (which drops the handler) leaves a tool call to finish and be audited.
async fn detached(
    handler: impl Future<Output = Result<Response, Refused>> + Send + 'static,
) -> Response {
    match tokio::spawn(handler).await {
        Ok(answered) => answered.unwrap_or_else(IntoResponse::into_response),
        Err(error) => {
            tracing::error!(error.message = %error, "a tool call's task failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}
