//! A call's answer read from what the server sends for it: one JSON body, or an event
//! stream carrying its progress first, resumed when it ends early.

use std::time::Duration;

use futures::StreamExt;
use http::{HeaderValue, header};
use rmcp::model::{CallToolResult, ProgressNotificationParam};
use rmcp_reqwest as reqwest;
use serde_json::{Value, json};
use sse_stream::SseStream;

use super::super::client::{McpError, ToolAnswer};
use super::background_posts::Poster;
use super::bounded_events::{Bounded, TOO_LARGE};
use super::session_headers::session_headers;
use super::{ENVELOPE, Kind, LAST_EVENT_ID, Listeners, content_type, not_json_rpc, transport};

/// How many times a call's event stream that ended before its answer is resumed.
const RESUMES: usize = 5;
/// The wait before a resume when the server named none (`retry:`), and the longest honoured.
const RESUME_AFTER: Duration = Duration::from_secs(1);
const RESUME_AFTER_AT_MOST: Duration = Duration::from_secs(10);

/// Reads a call's answer from what the server sends for it.
pub(super) struct Reading<'a> {
    pub(super) id: Value,
    pub(super) listeners: Listeners<'a>,
    pub(super) post: &'a Poster,
    pub(super) limit: usize,
}

type Answer = Result<ToolAnswer, McpError>;

impl Reading<'_> {
    /// One JSON body: a message, or a batch of them. `Some` once the call's answer is in it.
    pub(super) fn message(&self, body: &[u8]) -> Result<Option<Answer>, McpError> {
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
    pub(super) async fn events(
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
