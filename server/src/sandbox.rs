//! The sandbox origin (SPEC §6): when `STRAD_SANDBOX_ORIGIN` is set, requests whose `Host`
//! is that origin's are answered here and nowhere else — the frame route and a 404 for every
//! other path. Nothing here reads or sets a cookie (there is no session layer), so a page on
//! the sandbox origin can never reach the console's session, and the console's routes are
//! never served to a page's origin.

use std::borrow::Cow;
use std::time::Instant;

use ::metrics::Label;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;
use url::Url;

use crate::state::ServerState;

/// The sandbox origin: the `Host` it answers to, and what its one route needs. It answers
/// by hand rather than through a router and its layers: it has one route, which is the route
/// loaded most often, and what a router would add to each load (matching, extracting,
/// copying the request's headers, a layer for each response header) is most of what a load
/// costs strad besides the bytes.
#[derive(Clone)]
pub struct Sandbox {
    host: String,
    state: ServerState,
}

impl Sandbox {
    pub fn new(origin: &Url, state: ServerState) -> Self {
        Self {
            host: authority_of(origin),
            state,
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

    /// The frame route for `GET` and `HEAD`, 405 for other methods on its path, 404
    /// everywhere else; each answer counted (`metrics::http_request`) and given the
    /// origin's headers (`origin_headers`).
    async fn answer(&self, request: Request) -> Response {
        let started = Instant::now();
        let method = request.method().clone();
        let load = frame_load(request.uri().path());
        let route = match load {
            Some(_) => crate::apps::FRAME_PATH,
            None => crate::metrics::UNMATCHED,
        };
        let mut response = match load {
            Some((slug, ticket)) if method == Method::GET || method == Method::HEAD => {
                let span = tracing::debug_span!("request", method = %method, uri = %request.uri());
                crate::apps::sandbox_frame(&self.state, request.headers(), &slug, &ticket)
                    .instrument(span)
                    .await
            }
            Some(_) => (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "GET,HEAD")],
            )
                .into_response(),
            None => not_here(&self.state.config.http.public_origin()),
        };
        if method == Method::HEAD {
            *response.body_mut() = axum::body::Body::empty();
        }
        origin_headers(response.headers_mut());
        let route = Label::from_static_parts("route", route);
        crate::metrics::http_request(route, &method, response.status(), started);
        response
    }
}

/// `(slug, ticket)` of a path the frame route answers, `/apps/{slug}/frame/{ticket}`
/// (`apps::FRAME_PATH`): two non-empty segments, percent-decoded as a router decodes them.
fn frame_load(path: &str) -> Option<(Cow<'_, str>, Cow<'_, str>)> {
    let (slug, ticket) = path.strip_prefix("/apps/")?.split_once("/frame/")?;
    if slug.is_empty() || ticket.is_empty() || slug.contains('/') || ticket.contains('/') {
        return None;
    }
    let decode = |segment| {
        percent_encoding::percent_decode_str(segment)
            .decode_utf8()
            .ok()
    };
    Some((decode(slug)?, decode(ticket)?))
}

/// What every answer of the sandbox origin carries: no sniffing, no referrer, and unless
/// the answer says otherwise (the frame route does), kept by no cache and framed by nobody.
fn origin_headers(h: &mut HeaderMap) {
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'"),
        );
    }
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
}

/// Sends a request for the sandbox origin to its own route; anything else goes on to the
/// console.
pub async fn dispatch(State(sandbox): State<Sandbox>, request: Request, next: Next) -> Response {
    if sandbox.is_for_me(&request) {
        sandbox.answer(request).await
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

fn not_here(console: &str) -> Response {
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
    fn a_frame_load_is_two_segments_around_frame() {
        let load = |p: &str| frame_load(p).map(|(s, t)| (s.into_owned(), t.into_owned()));
        assert_eq!(
            load("/apps/clock/frame/abc_-1"),
            Some(("clock".into(), "abc_-1".into()))
        );
        assert_eq!(
            load("/apps/cl%6Fck/frame/a%2Db"),
            Some(("clock".into(), "a-b".into())),
            "decoded as a router decodes"
        );
        for not in [
            "/apps/clock/frame/",
            "/apps//frame/abc",
            "/apps/clock/frame/abc/",
            "/apps/clock/frame/abc/def",
            "/apps/a/b/frame/abc",
            "/apps/clock/frames/abc",
            "/apps/clock/frame",
            "/x/apps/clock/frame/abc",
            "/apps/clock/frame/%FF",
            "/",
        ] {
            assert_eq!(load(not), None, "{not}");
        }
    }

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
