//! The write gate (SPEC §3): every request that can change anything — any method but GET and
//! HEAD, on any route, server functions included — passes here before its handler.
//!
//! - **From the console only.** It carries the console's own `Origin`, or, without one,
//!   `Sec-Fetch-Site: same-origin`. `SameSite=Lax` is not enough: a page on another port of
//!   the same host (in local mode any other local web server, an app developer's included)
//!   or a sibling subdomain is the same *site*, and its form posts carry the cookie.
//! - **Not from a token session.** A session opened from a login token may only view: it
//!   may end itself (sign-out), and nothing else. Each refusal is audited.
//!
//! Reads are GET (the console's reading server functions are declared `GetUrl`), so the
//! method alone tells a write; a route added later is gated without anyone remembering to.
//! `/mcp` is not a console route: MCP clients authenticate with a login token, not the
//! cookie, and the relay checks `Origin` itself.

use app::audit::ssr::writer::{self, Actor, AuditEvent};
use app::auth::ssr::session::signed_in_person;
use axum::Json;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tower_sessions::Session;

use crate::state::ServerState;

/// The one path a token session may post to.
const SIGN_OUT: &str = "/auth/sign-out";

pub async fn write_gate(
    State(state): State<ServerState>,
    session: Session,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    if !is_write(request.method()) || path == "/mcp" || path.starts_with("/mcp/") {
        return next.run(request).await;
    }
    if !from_console(request.headers(), &state.config.http.public_origin()) {
        let header = |name| request.headers().get(name).and_then(|v| v.to_str().ok());
        tracing::warn!(
            http.method = %request.method(),
            http.path = %path,
            http.origin = header("origin").unwrap_or("-"),
            http.sec_fetch_site = header("sec-fetch-site").unwrap_or("-"),
            "a write from outside the console was refused"
        );
        return refused("Cross-site request refused: changes are made from the console only.");
    }
    if path == SIGN_OUT {
        return next.run(request).await;
    }
    let person = match signed_in_person(&session).await {
        Ok(person) => person,
        Err(error) => {
            tracing::error!(error.message = %error, "could not load a session");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    if let Some(person) = person.filter(|p| !p.may_write()) {
        let email = sqlx::query_scalar!("SELECT email FROM users WHERE id = $1", person.user_id)
            .fetch_optional(&state.app.pool)
            .await
            .ok()
            .flatten();
        let actor = Actor::person(person.user_id, email.as_deref().unwrap_or_default());
        let event = AuditEvent::WriteRefused {
            method: request.method().as_str().to_owned(),
            path: path.to_owned(),
            token_id: person.token_id,
        };
        if let Err(error) = writer::append_alone(&state.app.pool, &actor, &event, None).await {
            tracing::error!(error.message = %error, "could not audit a refused write");
        }
        return refused(
            "A session opened with a login token may look around the console but cannot change anything.",
        );
    }
    next.run(request).await
}

/// Any method but GET and HEAD can change something.
pub fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD)
}

/// Whether a request comes from the console's own pages: its `Origin` is `public_origin`,
/// or it has none and the browser says `Sec-Fetch-Site: same-origin`; and a browser that
/// says where it comes from says the same origin. A request that says neither (a script
/// outside any browser) is refused: the console's own pages always say one.
pub fn from_console(headers: &HeaderMap, public_origin: &str) -> bool {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let fetch_site = header("sec-fetch-site");
    let origin_ok = match header("origin") {
        Some(origin) => origin == public_origin,
        None => fetch_site == Some("same-origin"),
    };
    origin_ok && fetch_site.is_none_or(|site| site == "same-origin")
}

fn refused(message: &str) -> Response {
    let mut response = (StatusCode::FORBIDDEN, Json(json!({"error": message}))).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGIN: &str = "http://127.0.0.1:3000";

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, value.parse().unwrap());
        }
        map
    }

    #[test]
    fn the_consoles_own_requests_pass() {
        for pairs in [
            vec![("origin", ORIGIN)],
            vec![("origin", ORIGIN), ("sec-fetch-site", "same-origin")],
            vec![("sec-fetch-site", "same-origin")],
        ] {
            assert!(from_console(&headers(&pairs), ORIGIN), "{pairs:?}");
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for pairs in [
            vec![],
            vec![("sec-fetch-site", "none")],
            vec![("sec-fetch-site", "same-site")],
            vec![("sec-fetch-site", "cross-site")],
            vec![("origin", "null")],
            vec![("origin", "http://127.0.0.1:3001")],
            vec![("origin", "http://localhost:3000")],
            vec![("origin", "http://127.0.0.1:3000.evil.example")],
            vec![("origin", "https://127.0.0.1:3000")],
            vec![("origin", ORIGIN), ("sec-fetch-site", "same-site")],
            vec![("origin", ORIGIN), ("sec-fetch-site", "cross-site")],
        ] {
            assert!(!from_console(&headers(&pairs), ORIGIN), "{pairs:?}");
        }
    }

    #[test]
    fn only_get_and_head_are_reads() {
        assert!(!is_write(&Method::GET));
        assert!(!is_write(&Method::HEAD));
        for method in [
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
            Method::OPTIONS,
        ] {
            assert!(is_write(&method), "{method}");
        }
    }
}
