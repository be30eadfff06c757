//! The HTTP client under strad's Streamable HTTP connections: reqwest with its connections
//! kept for the next request.
//!
//! rmcp's own default client keeps no idle connection, so every request to a server opened
//! a TCP connection and closed it (one TIME_WAIT socket per tool call, on both ends). Its
//! worker also stops reading a call's event stream as soon as it has the answer, which would
//! leave the connection unusable. Here every event stream dropped before its end is read to
//! the end in the background (for at most `DRAIN_FOR`), so its connection goes back to the
//! pool; a stream still open by then is dropped and its connection closed, as before.
//!
//! The hub's connections (`recording`) also note the session id and protocol version each
//! request leaves with, so tool calls can be posted straight into the session (`direct.rs`)
//! on the same pool.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{BoxStream, Stream};
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use rmcp_reqwest as reqwest;
use sse_stream::Sse;

use super::direct::Negotiated;

/// How long a dropped event stream is read to its end before its connection is given up.
const DRAIN_FOR: Duration = Duration::from_secs(1);
/// How long an idle connection is kept for the next request: under the keep-alive timeout of
/// the servers MCP servers run on (Node's http and Python's uvicorn: 5 s), so strad never
/// sends a request on a connection the server is closing at that moment. That race lost a
/// call now and then (reqwest's default keeps connections 90 s): "error sending request",
/// and a tool call is never retried.
pub const IDLE_FOR: Duration = Duration::from_secs(4);
/// Redirects followed for one request (same origin, method and body kept: 307 and 308).
const MAX_REDIRECTS: usize = 10;

/// A Streamable HTTP transport to `url`, with `bearer` as its Authorization when given, on
/// a client of its own (`client`): a caller beside strad, never strad's own connections.
pub fn transport(url: &str, bearer: Option<&str>) -> StreamableHttpClientTransport<Pooled> {
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    if let Some(token) = bearer {
        config = config.auth_header(token);
    }
    StreamableHttpClientTransport::with_client(Pooled::on(client()), config)
}

/// A transport to `url` on `client` that records its session's headers in `negotiated`, for
/// direct calls in the same session and over the same pool.
pub fn recording(
    url: &str,
    negotiated: Negotiated,
    client: &reqwest::Client,
) -> StreamableHttpClientTransport<Pooled> {
    let pooled = Pooled {
        negotiated: Some(negotiated),
        ..Pooled::on(client.clone())
    };
    let config = StreamableHttpClientTransportConfig::with_uri(url);
    StreamableHttpClientTransport::with_client(pooled, config)
}

/// reqwest, keeping idle connections, its dropped event streams read to their end.
#[derive(Clone)]
pub struct Pooled {
    client: reqwest::Client,
    negotiated: Option<Negotiated>,
}

/// A client for connections to servers: idle connections kept per origin for `IDLE_FOR`,
/// same-origin redirects only. A client holds its TLS configuration (the parsed root
/// certificates) and its connection pool, so a hub and all its siblings share one
/// (`Hub::new`); credentials go per request, so sharing it mixes nothing.
///
/// A pooled connection is driven by the runtime that opened it, whoever uses it next, so a
/// client is not shared beyond one strad: two in one process (the tests and benchmarks run
/// several beside their own callers) would otherwise each do the other's network I/O, a
/// wake of another runtime's thread on every request.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(same_origin_only())
        .tcp_nodelay(true)
        .pool_idle_timeout(IDLE_FOR)
        .build()
        .expect("a reqwest client with rustls builds")
}

impl Pooled {
    fn on(client: reqwest::Client) -> Self {
        Self {
            client,
            negotiated: None,
        }
    }
}

/// A JSON-RPC message must reach the URL configured: only a same-origin 307 or 308 (which
/// keep the method and the body) is followed. Any other redirect is returned as it is, so
/// the session id and headers are never replayed to another origin.
fn same_origin_only() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let first = attempt.previous().first().map(|url| url.origin());
        if !keeps_body || first != Some(attempt.url().origin()) {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

impl StreamableHttpClient for Pooled {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        if let Some(negotiated) = &self.negotiated {
            negotiated.saw(&message, session_id.as_deref(), &custom_headers);
        }
        let response = self
            .client
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await?;
        Ok(match response {
            StreamableHttpPostResponse::Sse(stream, session) => {
                StreamableHttpPostResponse::Sse(DrainedOnDrop::boxed(stream), session)
            }
            other => other,
        })
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.client
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.client
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }
}

type Events = BoxStream<'static, Result<Sse, SseError>>;

/// An event stream that, dropped before its end, is read to the end on a task of its own
/// for at most `drain_for`.
struct DrainedOnDrop {
    events: Option<Events>,
    ended: bool,
    drain_for: Duration,
}

impl DrainedOnDrop {
    fn boxed(events: Events) -> Events {
        Self::draining_for(events, DRAIN_FOR)
    }

    fn draining_for(events: Events, drain_for: Duration) -> Events {
        Box::pin(Self {
            events: Some(events),
            ended: false,
            drain_for,
        })
    }
}

impl Stream for DrainedOnDrop {
    type Item = Result<Sse, SseError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(events) = self.events.as_mut() else {
            return Poll::Ready(None);
        };
        let next = events.poll_next_unpin(cx);
        if matches!(next, Poll::Ready(None)) {
            self.ended = true;
        }
        next
    }
}

impl Drop for DrainedOnDrop {
    fn drop(&mut self) {
        let (Some(mut rest), false) = (self.events.take(), self.ended) else {
            return;
        };
        // (Outside a runtime, as when one shuts down, the connection is simply closed.)
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let drain_for = self.drain_for;
            runtime.spawn(async move {
                let _ =
                    tokio::time::timeout(drain_for, async { while rest.next().await.is_some() {} })
                        .await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(n: usize) -> Events {
        futures::stream::iter((0..n).map(|_| Ok(Sse::default()))).boxed()
    }

    #[tokio::test]
    async fn a_stream_dropped_early_is_read_to_its_end() {
        let read = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = {
            let read = read.clone();
            events(5)
                .inspect(move |_| {
                    read.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                })
                .boxed()
        };
        let mut stream = DrainedOnDrop::boxed(counted);
        assert!(stream.next().await.is_some());
        drop(stream);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while read.load(std::sync::atomic::Ordering::SeqCst) < 5 {
            assert!(tokio::time::Instant::now() < deadline, "the rest was read");
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_stream_that_never_ends_is_given_up() {
        let alive = Arc::new(());
        let held = alive.clone();
        let never: Events = futures::stream::pending()
            .inspect(move |_: &Result<Sse, SseError>| {
                let _ = &held;
            })
            .boxed();
        drop(DrainedOnDrop::draining_for(
            never,
            Duration::from_millis(50),
        ));
        assert_eq!(Arc::strong_count(&alive), 2, "still read in the background");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while Arc::strong_count(&alive) > 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "given up after 50 ms"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_stream_read_to_its_end_is_not_read_again() {
        let alive = Arc::new(());
        let held = alive.clone();
        let two = events(2)
            .inspect(move |_| {
                let _ = &held;
            })
            .boxed();
        let mut stream = DrainedOnDrop::boxed(two);
        while stream.next().await.is_some() {}
        drop(stream);
        assert_eq!(
            Arc::strong_count(&alive),
            1,
            "nothing left to read in the background"
        );
    }
}
