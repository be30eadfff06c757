//! Frame loads (SPEC §6), answered before any routing on whichever origin serves them: on
//! the sandbox origin (`sandbox`), every request; on the console's origin, the frame route's.
//! It is the route loaded most often, and what a router and the console's layers would add
//! to each load (matching, extracting, copying the request's headers, the session layer with
//! its cookie jar and span, a layer for each response header) is most of what a load costs
//! strad besides the bytes (docs/benchmarks.md). So each answer gets here, in one function
//! each, what those layers would give it: its origin's headers (`sandbox::origin_headers`,
//! `security_headers::console`), its count (`metrics::http_request`) and, on the console's
//! origin, the request's session (`CookieSessions`).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use ::metrics::Label;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tracing::Instrument;

use crate::sandbox::{self, Sandbox};
use crate::session_store::CookieSessions;
use crate::state::ServerState;

/// What answers frame loads: the state, the sandbox origin when there is one, and the
/// console's sessions.
pub struct FrameLoads {
    state: ServerState,
    sandbox: Option<Sandbox>,
    sessions: CookieSessions,
}

#[derive(Clone, Copy)]
enum Origin {
    Sandbox,
    Console,
}

impl FrameLoads {
    pub fn new(state: ServerState, sandbox: Option<Sandbox>, sessions: CookieSessions) -> Self {
        Self {
            state,
            sandbox,
            sessions,
        }
    }

    /// The frame route for `GET` and `HEAD`, 405 for other methods on its path, and on the
    /// sandbox origin 404 for every other path (`load`, the path of `parts` as `frame_load`
    /// reads it); each answer counted and given its origin's headers.
    async fn answer(
        &self,
        parts: &Parts,
        load: Option<(Cow<'_, str>, Cow<'_, str>)>,
        origin: Origin,
    ) -> Response {
        let started = Instant::now();
        let method = parts.method.clone();
        let route = match load {
            Some(_) => crate::apps::FRAME_PATH,
            None => crate::metrics::UNMATCHED,
        };
        let mut response = match load {
            Some((slug, ticket)) if method == Method::GET || method == Method::HEAD => {
                let span = tracing::debug_span!("request", method = %method, uri = %parts.uri);
                let (state, headers) = (&self.state, &parts.headers);
                match origin {
                    Origin::Sandbox => {
                        crate::apps::sandbox_frame(state, headers, &slug, &ticket)
                            .instrument(span)
                            .await
                    }
                    Origin::Console => {
                        let session = self.sessions.session_of(headers);
                        crate::apps::console_frame(state, headers, &slug, &ticket, &session)
                            .instrument(span)
                            .await
                    }
                }
            }
            Some(_) => (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "GET,HEAD")],
            )
                .into_response(),
            None => sandbox::not_here(&self.state.config.http.public_origin()),
        };
        if method == Method::HEAD {
            *response.body_mut() = axum::body::Body::empty();
        }
        match origin {
            Origin::Sandbox => sandbox::origin_headers(response.headers_mut()),
            Origin::Console => crate::security_headers::console(response.headers_mut(), false),
        }
        let route = Label::from_static_parts("route", route);
        crate::metrics::http_request(route, &method, response.status(), started);
        response
    }
}

/// Sends every request for the sandbox origin, and a frame load on the console's, to
/// `FrameLoads::answer`; anything else goes on to the console's router.
pub async fn dispatch(
    State(loads): State<Arc<FrameLoads>>,
    request: Request,
    next: Next,
) -> Response {
    let on_sandbox = loads
        .sandbox
        .as_ref()
        .is_some_and(|s| s.is_for_me(&request));
    // The path is read once, here. The body stays apart: a frame load never reads it, and
    // a body cannot be shared across an await (it is not `Sync`).
    let (parts, body) = request.into_parts();
    let load = frame_load(parts.uri.path());
    let origin = if on_sandbox {
        Origin::Sandbox
    } else if load.is_some() {
        Origin::Console
    } else {
        drop(load);
        return next.run(Request::from_parts(parts, body)).await;
    };
    loads.answer(&parts, load, origin).await
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
}
