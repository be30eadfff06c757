//! The sandbox origin (SPEC §6): when `STRAD_SANDBOX_ORIGIN` is set, requests whose `Host`
//! is that origin's are answered here and nowhere else — the frame route and a 404 for every
//! other path. Nothing here reads or sets a cookie (there is no session layer), so a page on
//! the sandbox origin can never reach the console's session, and the console's routes are
//! never served to a page's origin.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower::ServiceExt;
use tower_http::set_header::SetResponseHeaderLayer;
use url::Url;

use crate::state::ServerState;

/// The sandbox origin's own router, and the `Host` it answers to.
#[derive(Clone)]
pub struct Sandbox {
    host: String,
    router: Router,
}

impl Sandbox {
    pub fn new(origin: &Url, state: ServerState) -> Self {
        let console = state.config.http.public_origin();
        let router = Router::new()
            .route(crate::apps::FRAME_PATH, get(crate::apps::sandbox_frame))
            .fallback(move || not_here(console.clone()))
            .layer(SetResponseHeaderLayer::if_not_present(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
            ))
            .layer(SetResponseHeaderLayer::overriding(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ))
            .layer(SetResponseHeaderLayer::overriding(
                header::REFERRER_POLICY,
                HeaderValue::from_static("no-referrer"),
            ))
            // Nothing here is kept by a cache but what says otherwise (the frame route).
            .layer(SetResponseHeaderLayer::if_not_present(
                header::CACHE_CONTROL,
                HeaderValue::from_static("no-store"),
            ))
            .layer(axum::middleware::from_fn(crate::metrics::track_http))
            .layer(tower_http::trace::TraceLayer::new_for_http())
            .with_state(state);
        Self {
            host: authority_of(origin),
            router,
        }
    }

    fn is_for_me(&self, request: &Request) -> bool {
        // HTTP/1.1 names the host in `Host`; HTTP/2 in the URI's authority.
        let named = request
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()));
        named.is_some_and(|host| host.eq_ignore_ascii_case(&self.host))
    }
}

/// Sends a request for the sandbox origin to its own router; anything else goes on to the
/// console.
pub async fn dispatch(State(sandbox): State<Sandbox>, request: Request, next: Next) -> Response {
    if sandbox.is_for_me(&request) {
        match sandbox.router.oneshot(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        }
    } else {
        next.run(request).await
    }
}

/// `host[:port]` as a browser writes it in `Host` for `origin` (no port when the default).
fn authority_of(origin: &Url) -> String {
    let host = origin.host_str().unwrap_or_default().to_ascii_lowercase();
    match origin.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

async fn not_here(console: String) -> Response {
    (
        StatusCode::NOT_FOUND,
        format!(
            "Not found. This origin serves strad's app frames only; the console is at {console}.\n"
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_is_written_as_a_browser_sends_it() {
        let url = |s: &str| Url::parse(s).unwrap();
        assert_eq!(
            authority_of(&url("http://localhost:3000")),
            "localhost:3000"
        );
        assert_eq!(
            authority_of(&url("https://Apps.Example.net")),
            "apps.example.net"
        );
        assert_eq!(
            authority_of(&url("https://apps.example.net:443")),
            "apps.example.net"
        );
        assert_eq!(
            authority_of(&url("https://apps.example.net:8443")),
            "apps.example.net:8443"
        );
    }
}
