//! GET /apps/<slug>/frame/<ticket> (SPEC §6): the person's pinned copy, with
//! `<base target="_blank">`, under the frame CSP built from exactly the served bytes. Anything
//! else the frame gets is `Stopped`: a readable page in which no script may run.
//!
//! Served on the console's origin (`console_frame`, where the session must be the ticket's
//! person) or, when one is configured, only on the sandbox origin (`sandbox_frame`, which
//! reads and sets no cookie: the signed ticket names the person). Both serve through
//! `serve`; `frame_loads` answers the requests of both, before any routing.

use app::apps::ssr::{csp, pins, scripts, tickets};
use app::error::AppError;
use app::servers::Capability;
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tower_sessions::Session;
use uuid::Uuid;

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

    /// The stopped page, framable by the console only: on the console's origin that is
    /// `'self'`; on the sandbox origin, the console's origin by name.
    fn respond(self, state: &ServerState, on_sandbox: bool) -> Response {
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
        let ancestors = if on_sandbox {
            state.config.http.public_origin()
        } else {
            "'self'".to_owned()
        };
        if let Ok(csp) = HeaderValue::from_str(&format!(
            "sandbox; default-src 'none'; script-src 'none'; frame-ancestors {ancestors}"
        )) {
            h.insert(header::CONTENT_SECURITY_POLICY, csp);
        }
        if !on_sandbox {
            h.insert(
                header::X_FRAME_OPTIONS,
                HeaderValue::from_static("SAMEORIGIN"),
            );
        }
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
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

/// The frame route on the console's origin (`frame_loads` matches its path), `session`
/// the request's: the ticket must be the signed-in person's. When frames are served from a
/// sandbox origin, none is served here.
pub async fn console_frame(
    state: &ServerState,
    headers: &HeaderMap,
    slug: &str,
    ticket: &str,
    session: &Session,
) -> Response {
    if state.config.http.sandbox_origin.is_some() {
        return Stopped::page(
            StatusCode::NOT_FOUND,
            "App frames are served from this console's sandbox origin.",
        )
        .respond(state, false);
    }
    serve(state, headers, slug, ticket, Some(session))
        .await
        .unwrap_or_else(|stopped| stopped.respond(state, false))
}

/// The frame route on the sandbox origin (`frame_loads` answers its requests): no cookie
/// is read or set; the ticket alone says whose frame load this is.
pub async fn sandbox_frame(
    state: &ServerState,
    headers: &HeaderMap,
    slug: &str,
    ticket: &str,
) -> Response {
    serve(state, headers, slug, ticket, None)
        .await
        .unwrap_or_else(|stopped| stopped.respond(state, true))
}

/// Serves the frame load `ticket` names, once: for the ticket's person (who must be the
/// session's, when there is one), entitled to `slug` now, whose pinned copy of the ticket's
/// resource is still the one the console opened.
async fn serve(
    state: &ServerState,
    headers: &HeaderMap,
    slug: &str,
    ticket: &str,
    session: Option<&Session>,
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
    // On the console's origin, only the console starts a frame load: a page that reloads
    // or navigates itself is a cross-site initiator (an opaque origin), and gets an inert
    // page. (On the sandbox origin every load is cross-site; the spent ticket stops those.)
    if session.is_some()
        && headers
            .get("sec-fetch-site")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|site| site != "same-origin")
    {
        return Err(Stopped::page(
            StatusCode::FORBIDDEN,
            "This app was stopped: it tried to load a page by itself. Open the app again from the console.",
        ));
    }
    let verified = state.app.frame_tickets.verify(ticket, slug);
    let refused = |why: tickets::Refused| {
        tracing::warn!(server.slug = %slug, ticket.refused = %why, "a frame load without a valid app session; served an inert document");
        Stopped::inert(NOT_OPENED)
    };
    let (pool, memos) = (&state.app.pool, &state.memos);
    let uri = verified.as_ref().ok().map(|claims| claims.uri.as_str());
    // For a person: their row, their entitlement, their pin's identity, all at once.
    let read = |person: Uuid| async move {
        let head = async {
            match uri {
                Some(uri) => memos.pin_head(pool, person, slug, uri).await,
                None => Ok(None),
            }
        };
        tokio::join!(
            memos.user(pool, person),
            memos.entitled(pool, person, slug),
            head
        )
    };
    // Any use of a well-signed ticket spends it, right or wrong, beside the reads.
    let spend = async {
        match &verified {
            Ok(claims) => Some(state.app.frame_tickets.spend(claims).await),
            Err(_) => None,
        }
    };
    // Whose frame load it is: on the console's origin the session's person, checked first
    // (signed in, 401; entitled, 403 — alike for a slug that does not exist); on the
    // sandbox origin, the ticket's.
    let (person, (user, server, head), spent) = match session {
        Some(session) => {
            let (found, spent) = tokio::join!(
                prefetch::with_person(&state.hints, session, |p| read(p.user_id)),
                spend
            );
            let (found, reads) = found
                .map_err(AppError::internal)?
                .ok_or(AppError::Unauthorized)?;
            (found.user_id, reads, spent)
        }
        None => {
            let person = verified.as_ref().map_err(|why| refused(*why))?.person;
            let (reads, spent) = tokio::join!(read(person), spend);
            (person, reads, spent)
        }
    };
    if user?.is_none() {
        return Err(AppError::Unauthorized.into());
    }
    let server = server?;
    if !server.approves(Capability::Apps) {
        return Err(Stopped::page(
            StatusCode::NOT_FOUND,
            "This server is not approved to show apps.",
        ));
    }
    let claims = verified.map_err(refused)?;
    if claims.person != person {
        tracing::warn!(server.slug = %slug, "a frame load with another person's app session; served an inert document");
        return Err(Stopped::inert(NOT_OPENED));
    }
    if !spent.transpose()?.unwrap_or(false) {
        tracing::warn!(server.slug = %slug, "a frame load with a spent app session; served an inert document");
        return Err(Stopped::inert(NOT_OPENED));
    }
    // The copy the console opened, and no other: a refresh since needs a new open.
    let head = head?
        .filter(|head| head.sha256 == claims.sha256)
        .ok_or_else(|| Stopped::page(StatusCode::CONFLICT, CHANGED))?;
    let uri = &claims.uri;
    let on_sandbox = session.is_none();
    // A prepared copy of exactly this pin row version is served from memory; anything else
    // is read, checked and prepared again.
    if let Some(prepared) = state.frames.get(person, slug, uri, &head.version) {
        return Ok(prepared.response(on_sandbox, headers));
    }
    let (pin, version) = pins::get(pool, person, slug, uri)
        .await?
        .filter(|(pin, _)| pin.sha256 == claims.sha256)
        .ok_or_else(|| Stopped::page(StatusCode::CONFLICT, CHANGED))?;
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
    let (prepared, new) = state.frames.prepare(Bytes::from(served), csp);
    if new {
        state.frames.compress_later(&prepared);
    }
    // The version read with the bytes: a row changed since is prepared again next time.
    state.frames.put(person, slug, uri, version, &prepared);
    Ok(prepared.response(on_sandbox, headers))
}

const NOT_OPENED: &str = "This app was stopped: it tried to load a second document, or this frame was not opened by the console. Open the app again from the console.";
const CHANGED: &str = "Your pinned copy of this app changed since it was opened. Open the app again from the console.";
