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

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage, ProgressNotificationParam,
};
use rmcp_reqwest as reqwest;
use serde_json::{Value, json};
use sse_stream::SseStream;

use super::client::{ChangeSender, McpError, ProgressSink, ToolAnswer, write};

const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");
const ACCEPT_BOTH: HeaderValue = HeaderValue::from_static("application/json, text/event-stream");
const JSON: HeaderValue = HeaderValue::from_static("application/json");

/// The protocol versions whose requests carry nothing but the session id and the version.
const PLAIN_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// How many times a call's event stream that ended before its answer is resumed.
const RESUMES: usize = 5;
/// The wait before a resume when the server named none (`retry:`), and the longest honoured.
const RESUME_AFTER: Duration = Duration::from_secs(1);
const RESUME_AFTER_AT_MOST: Duration = Duration::from_secs(10);

/// Request ids of direct calls: strings, so they never meet rmcp's numbers in the session.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// The headers of the session rmcp's transport opened, as its latest request carried them.
#[derive(Clone, Default)]
pub struct Negotiated(Arc<std::sync::RwLock<Option<Arc<SessionHeaders>>>>);

#[derive(Debug, PartialEq, Eq)]
pub struct SessionHeaders {
    session: Option<HeaderValue>,
    version: Option<HeaderValue>,
}

impl Negotiated {
    /// Records what one of rmcp's POSTs carried (every POST passes here as it leaves).
    pub(super) fn saw(
        &self,
        message: &ClientJsonRpcMessage,
        session: Option<&str>,
        headers: &HashMap<HeaderName, HeaderValue>,
    ) {
        if let JsonRpcMessage::Request(request) = message
            && matches!(request.request, ClientRequest::InitializeRequest(_))
        {
            return;
        }
        let seen = plain(session, headers).map(Arc::new);
        let mut current = write(&self.0);
        if current.as_deref() != seen.as_deref() {
            *current = seen;
        }
    }

    fn current(&self) -> Option<Arc<SessionHeaders>> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Forgets `stale` (the server no longer knows it), unless rmcp has moved on already.
    fn forget(&self, stale: &Arc<SessionHeaders>) {
        let mut current = write(&self.0);
        if current.as_ref().is_some_and(|c| Arc::ptr_eq(c, stale)) {
            *current = None;
        }
    }
}

/// The session's headers, when they are all a direct call needs to send.
fn plain(
    session: Option<&str>,
    headers: &HashMap<HeaderName, HeaderValue>,
) -> Option<SessionHeaders> {
    if headers.keys().any(|name| *name != PROTOCOL_VERSION) {
        return None;
    }
    let version = headers.get(&PROTOCOL_VERSION).cloned();
    if let Some(version) = &version
        && !PLAIN_VERSIONS.iter().any(|plain| version == plain)
    {
        return None;
    }
    let session = match session {
        Some(id) => Some(HeaderValue::from_str(id).ok()?),
        None => None,
    };
    Some(SessionHeaders { session, version })
}

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

fn session_headers(session: &SessionHeaders) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(id) = &session.session {
        headers.insert(SESSION_ID, id.clone());
    }
    if let Some(version) = &session.version {
        headers.insert(PROTOCOL_VERSION, version.clone());
    }
    headers
}

/// Sends a message of the session's in the background (an answer to the server's request,
/// or a cancellation); a failure is the server's to notice, as with rmcp.
#[derive(Clone)]
struct Poster {
    client: reqwest::Client,
    url: Arc<str>,
    session: Arc<SessionHeaders>,
}

impl Poster {
    fn send(&self, message: Value) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let request = self
            .client
            .post(self.url.as_ref())
            .headers(session_headers(&self.session))
            .header(header::ACCEPT, ACCEPT_BOTH)
            .header(header::CONTENT_TYPE, JSON)
            .body(message.to_string());
        runtime.spawn(async move {
            let _ = request.send().await;
        });
    }
}

/// A call sent and not yet answered: dropped so, it tells the server the call is cancelled.
struct Pending {
    post: Poster,
    id: Option<String>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.post.send(
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": id, "reason": "the caller cancelled the request"}}),
            );
        }
    }
}

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

/// Reads a call's answer from what the server sends for it.
struct Reading<'a> {
    id: Value,
    listeners: Listeners<'a>,
    post: &'a Poster,
    limit: usize,
}

type Answer = Result<ToolAnswer, McpError>;

impl Reading<'_> {
    /// One JSON body: a message, or a batch of them. `Some` once the call's answer is in it.
    fn message(&self, body: &[u8]) -> Result<Option<Answer>, McpError> {
        let value: Value = serde_json::from_slice(body).map_err(|_| not_json_rpc())?;
        match value {
            Value::Array(batch) => {
                let mut answer = None;
                for message in batch {
                    answer = answer.or(self.one(message)?);
                }
                Ok(answer)
            }
            message => self.one(message),
        }
    }

    fn one(&self, message: Value) -> Result<Option<Answer>, McpError> {
        let Value::Object(mut message) = message else {
            return Err(not_json_rpc());
        };
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (Some(method), Some(id)) => {
                self.answer_request(method, id.clone());
                Ok(None)
            }
            (Some(method), None) => {
                let method = method.to_owned();
                self.notified(&method, message.remove("params"));
                Ok(None)
            }
            (None, Some(id)) if *id == self.id => {
                if let Some(result) = message.remove("result") {
                    let result: CallToolResult = serde_json::from_value(result)
                        .map_err(|e| McpError::Malformed(e.to_string()))?;
                    let json = serde_json::to_string(&result)
                        .map_err(|e| McpError::Malformed(e.to_string()))?;
                    if json.len() > self.limit {
                        return Ok(Some(Err(McpError::TooLarge { limit: self.limit })));
                    }
                    Ok(Some(Ok(ToolAnswer { result, json })))
                } else if let Some(error) = message.get("error") {
                    let text = error["message"].as_str().unwrap_or("unknown error");
                    Ok(Some(Err(McpError::Server(text.to_owned()))))
                } else {
                    Err(not_json_rpc())
                }
            }
            // Another request's answer, or nothing at all: not this call's business.
            _ => Ok(None),
        }
    }

    /// A request from the server in the middle of the call, answered as rmcp's default
    /// client handler answers it (strad declares none of these capabilities).
    fn answer_request(&self, method: &str, id: Value) {
        let answer = match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
            "elicitation/create" => {
                json!({"jsonrpc": "2.0", "id": id, "result": {"action": "decline"}})
            }
            _ => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("Method not found: {method}")}}),
        };
        self.post.send(answer);
    }

    fn notified(&self, method: &str, params: Option<Value>) {
        match method {
            "notifications/progress" => {
                let Some(sink) = self.listeners.progress else {
                    return;
                };
                let Some(params) = params else { return };
                if params.get("progressToken") != Some(&self.id) {
                    return;
                }
                if let Ok(progress) = serde_json::from_value::<ProgressNotificationParam>(params) {
                    let _ = sink.send(progress);
                }
            }
            "notifications/tools/list_changed" | "notifications/resources/list_changed" => {
                let _ = self.listeners.changes.send(self.listeners.slug.to_owned());
            }
            _ => {}
        }
    }

    /// The call's event stream, resumed if it ends before the answer and its events have ids.
    /// `None`: it ended with no answer and cannot be resumed.
    async fn events(
        &self,
        response: reqwest::Response,
        client: &reqwest::Client,
        url: &str,
    ) -> Result<Option<Answer>, McpError> {
        let mut response = response;
        let mut last_id: Option<String> = None;
        let mut wait = RESUME_AFTER;
        for resume in 0..=RESUMES {
            let mut events = std::pin::pin!(SseStream::from_bytes_stream(Bounded::new(
                Box::pin(response.bytes_stream()),
                self.limit + ENVELOPE,
            )));
            while let Some(event) = events.next().await {
                let event = event.map_err(|e| match e {
                    sse_stream::Error::Body(e) if e.to_string() == TOO_LARGE => {
                        McpError::TooLarge { limit: self.limit }
                    }
                    sse_stream::Error::Body(_) => {
                        McpError::Transport("the connection failed while reading the answer".into())
                    }
                    _ => McpError::Transport("the server's event stream is malformed".into()),
                })?;
                if let Some(id) = event.id {
                    last_id = Some(id);
                }
                if let Some(retry) = event.retry {
                    wait = Duration::from_millis(retry).min(RESUME_AFTER_AT_MOST);
                }
                let data = event.data.unwrap_or_default();
                if data.is_empty() || event.event.as_deref().is_some_and(|e| e != "message") {
                    continue;
                }
                if let Some(answer) = self.message(data.as_bytes())? {
                    return Ok(Some(answer));
                }
            }
            let Some(last) = last_id.clone() else {
                return Ok(None);
            };
            if resume == RESUMES {
                break;
            }
            tokio::time::sleep(wait).await;
            let mut headers = session_headers(&self.post.session);
            headers.insert(
                LAST_EVENT_ID,
                HeaderValue::from_str(&last).map_err(|_| not_json_rpc())?,
            );
            response = client
                .get(url)
                .headers(headers)
                .header(header::ACCEPT, "text/event-stream")
                .send()
                .await
                .map_err(transport)?;
            if !response.status().is_success()
                || !matches!(content_type(response.headers()), Some(Kind::EventStream))
            {
                return Err(McpError::Transport(format!(
                    "the server's event stream could not be resumed (HTTP {})",
                    response.status()
                )));
            }
        }
        Ok(None)
    }
}

/// A byte stream that fails once more than `limit` bytes came since the last blank line,
/// so one event can never grow past the limit in the parser's buffer.
struct Bounded<S> {
    inner: S,
    limit: usize,
    since_blank: usize,
    /// The last two bytes seen, to find a blank line split across chunks.
    tail: [u8; 2],
}

const TOO_LARGE: &str = "an event larger than the limit";

impl<S> Bounded<S> {
    fn new(inner: S, limit: usize) -> Self {
        Self {
            inner,
            limit,
            since_blank: 0,
            tail: [0, 0],
        }
    }

    /// Counts `chunk`; false once an event has outgrown the limit.
    fn count(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            let blank = byte == b'\n' && (self.tail[1] == b'\n' || self.tail == *b"\n\r")
                || byte == b'\r' && self.tail[1] == b'\r';
            self.tail = [self.tail[1], byte];
            self.since_blank = if blank { 0 } else { self.since_blank + 1 };
            if self.since_blank > self.limit {
                return false;
            }
        }
        true
    }
}

impl<S, D, E> futures::Stream for Bounded<S>
where
    S: futures::Stream<Item = Result<D, E>> + Unpin,
    D: AsRef<[u8]>,
    E: std::error::Error + Send + Sync + 'static,
{
    type Item = Result<D, std::io::Error>;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = self.get_mut();
        this.inner.poll_next_unpin(cx).map(|item| {
            item.map(|chunk| match chunk {
                Ok(chunk) if this.count(chunk.as_ref()) => Ok(chunk),
                Ok(_) => Err(std::io::Error::other(TOO_LARGE)),
                Err(err) => Err(std::io::Error::other(err)),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HashMap<HeaderName, HeaderValue> {
        pairs
            .iter()
            .map(|(n, v)| (HeaderName::from_static(n), HeaderValue::from_static(v)))
            .collect()
    }

    #[test]
    fn only_a_session_of_plain_headers_is_called_directly() {
        let plain_one = plain(
            Some("abc"),
            &headers(&[("mcp-protocol-version", "2025-06-18")]),
        )
        .unwrap();
        assert_eq!(plain_one.session.unwrap(), "abc");
        assert_eq!(plain_one.version.unwrap(), "2025-06-18");
        assert!(
            plain(None, &HashMap::new()).is_some(),
            "no session, no version"
        );
        assert!(
            plain(
                Some("abc"),
                &headers(&[("mcp-protocol-version", "2026-07-28")])
            )
            .is_none(),
            "a version with standard headers"
        );
        assert!(
            plain(
                Some("abc"),
                &headers(&[
                    ("mcp-protocol-version", "2025-06-18"),
                    ("mcp-method", "tools/call")
                ])
            )
            .is_none(),
            "any other header"
        );
        assert!(
            plain(
                Some("bad\u{7f}"),
                &headers(&[("mcp-protocol-version", "2025-06-18")])
            )
            .is_none()
        );
    }

    #[test]
    fn an_event_is_bounded_and_blank_lines_reset_the_count() {
        let mut bounded = Bounded::new((), 12);
        assert!(bounded.count(b"data: 1\n"));
        assert!(bounded.count(b"\n"), "a blank line split across chunks");
        assert!(bounded.count(b"data: 2\r\n\r\n"));
        assert!(bounded.count(b"data: 3\r\r"));
        assert!(bounded.count(b"data: 4\r\n"));
        assert!(bounded.count(b"\r\n"), "CRLF, split across chunks");
        assert!(bounded.count(b"123456789012"));
        assert!(!bounded.count(b"3"), "the 13th byte of one event");
        let mut bounded = Bounded::new((), 12);
        assert!(
            !bounded.count(b"data: 1\ndata: 2\n"),
            "lines of one event count together"
        );
    }

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
