//! The sandbox origin (SPEC §6): when `STRAD_SANDBOX_ORIGIN` is set, requests whose `Host`
//! is that origin's are answered by `frame_loads` and nowhere else — the frame route and a
//! 404 for every other path. Nothing there reads or sets a cookie (there is no session
//! layer), so a page on the sandbox origin can never reach the console's session, and the
//! console's routes are never served to a page's origin. This file says which requests are
//! the sandbox origin's and what its answers carry besides the frame's own.

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use url::Url;

use crate::security_headers::unless_set;

/// The sandbox origin, by the `Host` it answers to.
#[derive(Clone)]
pub struct Sandbox {
    host: String,
}

impl Sandbox {
    pub fn new(origin: &Url) -> Self {
        Self {
            host: authority_of(origin),
        }
    }

    /// Whether `request` is for the sandbox origin.
    pub fn is_for_me(&self, request: &Request) -> bool {
        // HTTP/1.1 names the host in `Host`; HTTP/2 in the URI's authority.
        let named = request
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| request.uri().authority().map(|a| a.as_str()));
        named.is_some_and(|host| host.eq_ignore_ascii_case(&self.host))
    }
}

/// What every answer of the sandbox origin carries: no sniffing, no referrer, and unless
/// the answer says otherwise (the frame route does), kept by no cache and framed by nobody.
pub fn origin_headers(h: &mut HeaderMap) {
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    unless_set(
        h,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; frame-ancestors 'none'",
    );
    unless_set(h, header::CACHE_CONTROL, "no-store");
}

/// `host[:port]` as a browser writes it in `Host` for `origin` (no port when the default).
fn authority_of(origin: &Url) -> String {
    let host = origin.host_str().unwrap_or_default().to_ascii_lowercase();
    match origin.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    }
}

/// Any path of the sandbox origin but the frame route's.
pub fn not_here(console: &str) -> Response {
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
