//! A `tools/call` posted straight to a Streamable HTTP server, inside the session strad's
//! rmcp connection opened.
//!
//! Through rmcp's client a call travels from the caller to the service task, to the
//! transport worker, to a task reading the answer's event stream, and back the same way:
//! four hand-offs and two parses of every message, about 0.27 ms of CPU per call against
//! 0.07 ms for the POST alone. A tool call needs none of it: it is one POST in the session,
//! answered by JSON or by an event stream that carries its progress first.
//!
//! The session's headers are the ones rmcp's transport sent with its latest request after
//! initialize ([`Negotiated`]). Until it has sent one, or when the protocol version it
//! negotiated asks for more than the session id and the version (2026-07-28's standard
//! headers, or any header strad does not know), calls go through rmcp as before. A 404 on
//! the session means the server dropped it and ran nothing: the call goes through rmcp,
//! which opens a new session and retries it there.
//!
//! Inside a call's event stream this does what strad's rmcp client does: progress goes to
//! the caller's sink, `list_changed` to discovery, a server's `ping` is answered, and any
//! other request gets the answer rmcp's default handler gives. A stream that ends before the
//! answer is resumed with `Last-Event-ID` when the server gave its events ids, as rmcp does.
//! Dropping the call before its answer tells the server it is cancelled.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use rmcp_reqwest as reqwest;
use serde_json::{Value, json};

use super::client::{ChangeSender, McpError, ProgressSink, ToolAnswer};

mod background_posts;
mod bounded_events;
mod reading;
mod session_headers;

use background_posts::{Pending, Poster};
use reading::Reading;
pub use session_headers::Negotiated;
use session_headers::{SessionHeaders, session_headers};

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Request ids of direct calls: strings, so they never meet rmcp's numbers in the session.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Direct calls to one server, beside its rmcp connection and on the same connection pool.
pub struct Direct {
    client: reqwest::Client,
    url: Arc<str>,
    negotiated: Negotiated,
}

/// Where a call's notifications go.
pub struct Listeners<'a> {
    pub progress: Option<&'a ProgressSink>,
    pub changes: &'a ChangeSender,
    pub slug: &'a str,
}

impl Direct {
    pub fn new(client: reqwest::Client, url: &str, negotiated: Negotiated) -> Self {
        Self {
            client,
            url: url.into(),
            negotiated,
        }
    }

    /// One `tools/call`. `Ok(None)`: nothing was run, and the call is rmcp's to make (no
    /// session to call in yet, or the server no longer knows it).
    pub async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Map<String, Value>,
        listeners: Listeners<'_>,
        limit: usize,
    ) -> Result<Option<ToolAnswer>, McpError> {
        let Some(session) = self.negotiated.current() else {
            return Ok(None);
        };
        let id = format!("strad-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
        let mut params = json!({"name": name, "arguments": arguments});
        if listeners.progress.is_some() {
            params["_meta"] = json!({"progressToken": id});
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let body = serde_json::to_vec(&body).map_err(|e| McpError::Malformed(e.to_string()))?;
        let mut pending = Pending {
            post: self.poster(&session),
            id: Some(id.clone()),
        };
        let response = self
            .client
            .post(self.url.as_ref())
            .headers(session_headers(&session))
            .header(header::ACCEPT, ACCEPT_BOTH)
            .header(header::CONTENT_TYPE, JSON)
            .body(body)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        if status == StatusCode::NOT_FOUND && session.session.is_some() {
            pending.id = None;
            self.negotiated.forget(&session);
            return Ok(None);
        }
        let reading = Reading {
            id: Value::String(id),
            listeners,
            post: &pending.post,
            limit,
        };
        let result = match content_type(response.headers()) {
            Some(Kind::Json) => {
                let body = bounded_body(response, limit + ENVELOPE).await?;
                match reading.message(&body) {
                    Ok(Some(answer)) => Some(answer),
                    _ if !status.is_success() => return Err(refused(status, &body)),
                    Ok(None) => {
                        return Err(McpError::Malformed(
                            "the server's answer does not answer the call".into(),
                        ));
                    }
                    Err(err) => return Err(err),
                }
            }
            Some(Kind::EventStream) if status.is_success() => {
                reading.events(response, &self.client, &self.url).await?
            }
            _ if !status.is_success() => return Err(refused(status, b"")),
            _ => {
                return Err(McpError::Transport(
                    "the server answered with an unexpected content type".into(),
                ));
            }
        };
        pending.id = None;
        match result {
            Some(answer) => answer.map(Some),
            None => Err(McpError::Transport(
                "the server closed the connection".into(),
            )),
        }
    }

    fn poster(&self, session: &Arc<SessionHeaders>) -> Poster {
        Poster {
            client: self.client.clone(),
            url: self.url.clone(),
            session: session.clone(),
        }
    }
}

/// Room for the JSON-RPC envelope around a result held to the response limit.
const ENVELOPE: usize = 64 * 1024;

enum Kind {
    Json,
    EventStream,
}

fn content_type(headers: &HeaderMap) -> Option<Kind> {
    let value = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    let essence = value.split(';').next()?.trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Some(Kind::Json)
    } else if essence.eq_ignore_ascii_case("text/event-stream") {
        Some(Kind::EventStream)
    } else {
        None
    }
}

fn transport(err: reqwest::Error) -> McpError {
    McpError::Transport(super::client::describe(&err))
}

/// An HTTP refusal, with the JSON-RPC error's message when the body has one.
fn refused(status: StatusCode, body: &[u8]) -> McpError {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|body| body["error"]["message"].as_str().map(str::to_owned));
    match message {
        Some(message) => {
            McpError::Transport(format!("the server answered HTTP {status}: {message}"))
        }
        None => McpError::Transport(format!("the server answered HTTP {status}")),
    }
}

fn not_json_rpc() -> McpError {
    McpError::Transport("the server's answer is not valid JSON-RPC".into())
}

/// A body of at most `limit` bytes.
async fn bounded_body(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, McpError> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(McpError::TooLarge { limit });
    }
    let mut body = Vec::new();
    let mut chunks = std::pin::pin!(response.bytes_stream());
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(transport)?;
        if body.len() + chunk.len() > limit {
            return Err(McpError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_read_by_their_essence() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("Text/Event-Stream; charset=utf-8"),
        );
        assert!(matches!(content_type(&headers), Some(Kind::EventStream)));
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        assert!(matches!(content_type(&headers), Some(Kind::Json)));
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
        assert!(content_type(&headers).is_none());
    }
}
