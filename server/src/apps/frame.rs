//! GET /apps/<slug>/frame/<ticket> (SPEC §6): the person's pinned copy, with
//! `<base target="_blank">`, under the frame CSP built from exactly the served bytes. Anything
//! else the frame gets is `Stopped`: a readable page in which no script may run.

use std::sync::Arc;

use app::apps::ssr::{csp, pins, scripts};
use app::audit::ssr::writer::AuditEvent;
use app::auth::ssr::session::SessionPerson;
use app::error::AppError;
use app::servers::Capability;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower_sessions::Session;

use super::frame_cache::PreparedFrame;
use super::person_context;
use crate::prefetch;
use crate::state::ServerState;

/// What a frame gets instead of the app.
#[derive(Debug)]
pub enum Stopped {
    App(AppError),
    Page(StatusCode, String),
}

impl Stopped {
    fn page(status: StatusCode, message: impl Into<String>) -> Self {
        Stopped::Page(status, message.into())
    }

    /// A load the console did not start: a second document, a forged or spent ticket.
    fn inert(message: &str) -> Self {
        Stopped::page(StatusCode::CONFLICT, message)
    }
}

impl From<AppError> for Stopped {
    fn from(error: AppError) -> Self {
        Stopped::App(error)
    }
}

impl From<sqlx::Error> for Stopped {
    fn from(error: sqlx::Error) -> Self {
        Stopped::App(error.into())
    }
}

impl IntoResponse for Stopped {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            Stopped::App(error) => (super::status_of(&error), error.to_string()),
            Stopped::Page(status, message) => (status, message),
        };
        let message = message
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;");
        let body = format!(
            "<!doctype html><html><head><meta charset=\"utf-8\"><title>stopped</title></head><body><p>{message}</p></body></html>"
        );
        let mut response = (status, body).into_response();
        let h = response.headers_mut();
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "sandbox; default-src 'none'; script-src 'none'; frame-ancestors 'self'",
            ),
        );
        h.insert(
            header::X_FRAME_OPTIONS,
            HeaderValue::from_static("SAMEORIGIN"),
        );
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

pub async fn frame(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path((slug, ticket)): Path<(String, String)>,
) -> Result<Response, Stopped> {
    // Only as a frame: a browser says where a response goes, and a top-level visit (a link
    // to the frame route, or a page opening it in a new tab) is not an app in the console.
    if let Some(dest) = headers.get("sec-fetch-dest").and_then(|v| v.to_str().ok())
        && dest != "iframe"
    {
        return Err(Stopped::page(
            StatusCode::FORBIDDEN,
            "This address only works inside the console. Open the app from the console.",
        ));
    }
    // Only the console starts a frame load: a page that reloads or navigates itself is a
    // cross-site initiator (an opaque origin), and gets an inert page. (Its request carries
    // no session cookie either: SameSite=Lax keeps it home.)
    if headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|site| site != "same-origin")
    {
        return Err(Stopped::page(
            StatusCode::FORBIDDEN,
            "This app was stopped: it tried to load a page by itself. Open the app again from the console.",
        ));
    }
    let pool = &state.app.pool;
    // The person, the entitlement and the pin's identity (no bytes) at once, and with the
    // session itself when whose it is can be guessed. The app session (ticket) names the
    // resource; it is spent only once everything else holds.
    let (tickets, slug_ref, ticket_ref, memos) = (
        &state.app.frame_tickets,
        slug.as_str(),
        ticket.as_str(),
        &state.memos,
    );
    let read = |person: SessionPerson| async move {
        let named = tickets.peek(ticket_ref, person.user_id, slug_ref);
        let pin_head = async {
            match &named {
                Some(uri) => memos.pin_head(pool, person.user_id, slug_ref, uri).await,
                None => Ok(None),
            }
        };
        let (user, server, head) = tokio::join!(
            memos.user(pool, person.user_id),
            memos.entitled(pool, person.user_id, slug_ref),
            pin_head,
        );
        (named, user, server, head)
    };
    let (person, (named, user, server, head)) = prefetch::with_person(&state.hints, &session, read)
        .await
        .map_err(AppError::internal)?
        .ok_or(AppError::Unauthorized)?;
    let ctx = person_context(&session, person, user).await?;
    let server = server?;
    if !server.approves(Capability::Apps) {
        return Err(Stopped::page(
            StatusCode::NOT_FOUND,
            "This server is not approved to show apps.",
        ));
    }
    // The app session: issued by the console for this person, this server and one frame
    // load. The resource it names is the one served, whatever the address says.
    let spent = state.app.frame_tickets.redeem(&ticket, ctx.user.id, &slug);
    let Some(uri) = spent.filter(|uri| Some(uri) == named.as_ref()) else {
        tracing::warn!(server.slug = %slug, "a frame load without a valid app session; served an inert document");
        return Err(Stopped::inert(
            "This app was stopped: it tried to load a second document, or this frame was not opened by the console. Open the app again from the console.",
        ));
    };
    // A prepared copy of exactly this pin row version is served from memory; anything else
    // is read, checked and prepared again.
    let head = head?;
    if let Some(head) = &head
        && let Some(prepared) = state.frames.get(ctx.user.id, &slug, &uri, &head.version)
    {
        return Ok(prepared.response());
    }
    let pin = match head {
        Some(_) => pins::get(pool, ctx.user.id, &slug, &uri)
            .await?
            .ok_or_else(|| Stopped::page(StatusCode::NOT_FOUND, "This app is no longer pinned."))?,
        // The first open pins (a load started by another site was stopped above).
        None => {
            let actor = ctx.actor();
            let pinned = pins::pin(
                pool,
                &state.app.hub,
                &server,
                &uri,
                &actor,
                ctx.user.id,
                AuditEvent::AppPinned,
            );
            match pinned.await {
                Ok(pin) => pin,
                Err(pins::PinError::Database(error)) => return Err(error.into()),
                Err(error) => {
                    let told = error.for_person(&slug, ctx.user.id);
                    return Err(Stopped::page(StatusCode::BAD_GATEWAY, told));
                }
            }
        }
    };
    if !pin.is_intact() {
        tracing::error!(server.slug = %slug, app.uri = %uri, "a pinned app's bytes no longer match its digest");
        return Err(Stopped::page(
            StatusCode::CONFLICT,
            "Your pinned copy of this app is corrupt. Refresh it to pin the server's copy again.",
        ));
    }
    let Ok(html) = String::from_utf8(pin.bytes.clone()) else {
        return Err(Stopped::page(
            StatusCode::CONFLICT,
            "Your pinned copy of this app is not text.",
        ));
    };
    let served = scripts::with_base_target(&html);
    let policy = csp::frame_csp(
        &state.config.http.public_origin(),
        &scripts::script_hashes(&served),
        &pin.resource_domains(),
    );
    let Ok(csp) = HeaderValue::from_str(&policy) else {
        return Err(Stopped::page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The app could not be served.",
        ));
    };
    let prepared = Arc::new(PreparedFrame {
        body: Bytes::from(served),
        csp,
    });
    // The version read with the bytes: a row changed since is prepared again next time.
    if let Ok(Some(head)) = pins::head(pool, ctx.user.id, &slug, &uri).await
        && head.sha256 == pin.sha256
    {
        state
            .frames
            .put(ctx.user.id, &slug, &uri, head.version, prepared.clone());
    }
    Ok(prepared.response())
}
