//! Plain tool calls answered without rmcp's session worker.
//!
//! Through rmcp, each `tools/call` travels from the HTTP handler to the session's worker, to
//! a task of the handler, back to the worker, and out as a Server-Sent Events stream with a
//! priming event and a cached copy of the answer for resumption. For the commonest request
//! of a relay that is most of strad's own work, so a `tools/call` that needs none of it is
//! answered here, with the same checks and audit row (`Relay::call`).
//!
//! Only a request that rmcp would itself accept and route to an open session is answered
//! here; anything else goes on to rmcp unchanged, body and all, so every refusal, every other
//! method, and every request that needs the session (the stateless revision's `_meta`,
//! SEP-2243 headers, tasks) keeps rmcp's behaviour:
//! - `POST`, `Content-Type: application/json`, accepting both JSON and event streams;
//! - a `Host` among the allowed ones, and no `Origin` other than strad's own;
//! - no `MCP-Protocol-Version` header, or one of the session revisions; no other `Mcp-*`
//!   header but the session id;
//! - the session open here and initialized (`notifications/initialized` seen);
//! - a body of at most rmcp's limit, declared by `Content-Length`, that parses as a
//!   `tools/call` request whose `_meta` holds nothing but a progress token, with no
//!   `inputResponses` or `requestState`, and an id no other request of the session is in
//!   flight under (one that is goes on to the session, which refuses it at once:
//!   `in_flight.rs`).
//!
//! The answer is one JSON response when the call ends before any progress; once progress
//! comes, an event stream of the progress (under the caller's token) and then the answer.
//!
//! `notifications/cancelled` naming a call running here cancels it (202, as rmcp answers a
//! notification). The call runs in a task of its own, so a client that goes away mid-call
//! still gets its call audited, as through the session worker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResponse, ClientJsonRpcMessage,
    ClientNotification, ClientRequest, ProgressNotification, ProgressNotificationParam,
    ProgressToken, RequestId, RequestMetaObject, ServerJsonRpcMessage, ServerNotification,
    ServerResult,
};
use tokio::sync::mpsc;
use tokio::task::JoinError;

use super::in_flight::Running;
use super::sessions::Open;
use super::{Caller, Relay};

/// rmcp's own limit on a request body.
const BODY_LIMIT: u64 = 4 * 1024 * 1024;

/// Session revisions: a request naming another one is rmcp's to answer.
const SESSION_REVISIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// What rmcp is configured to accept of `Host` and `Origin`.
pub(crate) struct Gate {
    pub hosts: [String; 2],
    pub origin: String,
}

/// The response, when `request` (in `open`, the session it names, when open) is one this
/// module answers; otherwise the request itself, unchanged, for rmcp.
#[allow(
    clippy::result_large_err,
    reason = "the request is moved once, not worth a box"
)]
pub(crate) async fn answer(
    gate: &Gate,
    relay: &Relay,
    caller: &Caller,
    open: Option<Arc<Open>>,
    request: Request,
) -> Result<Response, Request> {
    let Some(open) = candidate(gate, open, &request) else {
        return Err(request);
    };
    let (parts, body) = request.into_parts();
    // Within the limit, by the declared length checked above.
    let Ok(bytes) = axum::body::to_bytes(body, BODY_LIMIT as usize).await else {
        return Ok((
            StatusCode::BAD_REQUEST,
            "Bad Request: the body could not be read",
        )
            .into_response());
    };
    let give_back = |parts, bytes| Err(Request::from_parts(parts, Body::from(bytes)));
    let Ok(message) = serde_json::from_slice::<ClientJsonRpcMessage>(&bytes) else {
        return give_back(parts, bytes);
    };
    match message {
        ClientJsonRpcMessage::Request(rpc) => {
            let ClientRequest::CallToolRequest(call) = rpc.request else {
                return give_back(parts, bytes);
            };
            let Some(token) = plain(&call) else {
                return give_back(parts, bytes);
            };
            let Some(running) = open.requests.start_here(rpc.id.clone()) else {
                return give_back(parts, bytes);
            };
            let query = parts.uri.query().map(str::to_owned);
            Ok(run(
                relay.clone(),
                caller.clone(),
                open,
                running,
                query,
                call.params,
                token,
                rpc.id,
            )
            .await)
        }
        ClientJsonRpcMessage::Notification(note) => match note.notification {
            ClientNotification::CancelledNotification(cancel)
                if cancel
                    .params
                    .request_id
                    .as_ref()
                    .is_some_and(|id| open.requests.cancel(id)) =>
            {
                Ok(StatusCode::ACCEPTED.into_response())
            }
            _ => give_back(parts, bytes),
        },
        _ => give_back(parts, bytes),
    }
}

/// Runs the call in a task of its own (a client that goes away mid-call still has it
/// audited) and answers: one JSON response when the call ends before any progress, an event
/// stream of its progress and then its answer otherwise, and an event stream ending empty
/// when the client cancelled it.
#[allow(clippy::too_many_arguments)]
async fn run(
    relay: Relay,
    caller: Caller,
    open: Arc<Open>,
    mut running: Running,
    query: Option<String>,
    params: CallToolRequestParams,
    token: Option<ProgressToken>,
    id: RequestId,
) -> Response {
    let (sink, mut steps) = mpsc::unbounded_channel();
    let sink = token.is_some().then_some(sink);
    let mut task = tokio::spawn(async move {
        let was_cancelled = AtomicBool::new(false);
        let cancelled = async {
            match (&mut running.cancelled).await {
                Ok(()) => was_cancelled.store(true, Ordering::Relaxed),
                // Never dropped unsent while the call runs; never a cancellation.
                Err(_) => std::future::pending().await,
            }
        };
        let answer = relay
            .call(
                &caller,
                query.as_deref(),
                &open.hub,
                params,
                sink,
                cancelled,
            )
            .await;
        drop(running);
        (answer, was_cancelled.load(Ordering::Relaxed))
    });
    // The first progress, if any comes before the answer. The end of the call is watched
    // too, not only the channel's closing, so the answer never waits on a sink held longer.
    let mut ended = None;
    let first = tokio::select! {
        biased;
        step = steps.recv() => step,
        result = &mut task => {
            ended = Some(result);
            steps.try_recv().ok()
        }
    };
    let final_message =
        move |ended: Result<(Result<CallToolResponse, McpError>, bool), JoinError>| match ended {
            Ok((_, true)) => None,
            Ok((Ok(response), false)) => Some(ServerJsonRpcMessage::response(
                ServerResult::from(response),
                id.clone(),
            )),
            Ok((Err(error), false)) => Some(ServerJsonRpcMessage::error(error, Some(id.clone()))),
            Err(error) => {
                tracing::error!(error.message = %error, "a relayed call's task failed");
                Some(ServerJsonRpcMessage::error(
                    McpError::internal_error("strad could not answer", None),
                    Some(id.clone()),
                ))
            }
        };
    let Some(first) = first else {
        let ended = match ended {
            Some(ended) => ended,
            None => (&mut task).await,
        };
        return match final_message(ended) {
            Some(message) => json(&message),
            // A cancelled request is not answered (the client has stopped waiting): the
            // stream ends empty, as rmcp's does.
            None => event_stream(futures::stream::empty()),
        };
    };
    let token = token.unwrap_or_else(|| unreachable!("progress comes only with a token"));
    let progress = move |mut step: ProgressNotificationParam| {
        step.progress_token = token.clone();
        ServerJsonRpcMessage::notification(ServerNotification::ProgressNotification(
            ProgressNotification::new(step),
        ))
    };
    let (frames, out) = mpsc::unbounded_channel();
    let _ = frames.send(progress(first));
    tokio::spawn(async move {
        let ended = match ended {
            Some(ended) => ended,
            None => loop {
                tokio::select! {
                    biased;
                    step = steps.recv() => match step {
                        Some(step) => {
                            if frames.send(progress(step)).is_err() {
                                // The client went away: the call goes on in its task, and
                                // is audited.
                                return;
                            }
                        }
                        None => break (&mut task).await,
                    },
                    ended = &mut task => break ended,
                }
            },
        };
        while let Ok(step) = steps.try_recv() {
            let _ = frames.send(progress(step));
        }
        if let Some(message) = final_message(ended) {
            let _ = frames.send(message);
        }
    });
    event_stream(futures::stream::unfold(out, |mut out| async move {
        out.recv().await.map(|message| (message, out))
    }))
}

/// The open, initialized session a request to answer here names, when its headers are ones
/// this module answers.
fn candidate(gate: &Gate, open: Option<Arc<Open>>, request: &Request) -> Option<Arc<Open>> {
    if request.method() != Method::POST {
        return None;
    }
    let headers = request.headers();
    let declared = headers
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .parse::<u64>()
        .ok()?;
    if declared > BODY_LIMIT || !is_json(headers) || !accepts_json_and_events(headers) {
        return None;
    }
    let host = headers.get(header::HOST)?.to_str().ok()?;
    if !gate.hosts.iter().any(|allowed| allowed == host) {
        return None;
    }
    if headers
        .get(header::ORIGIN)
        .is_some_and(|origin| origin.as_bytes() != gate.origin.as_bytes())
    {
        return None;
    }
    for (name, value) in headers {
        match name.as_str() {
            "mcp-protocol-version"
                if !SESSION_REVISIONS
                    .iter()
                    .any(|v| v.as_bytes() == value.as_bytes()) =>
            {
                return None;
            }
            "mcp-protocol-version" | "mcp-session-id" => {}
            other if other.starts_with("mcp-") => return None,
            _ => {}
        }
    }
    open.filter(|open| open.initialized())
}

/// The caller's progress token (`Some(None)` without one) when the call needs nothing of
/// the session: its `_meta` holds nothing but a progress token (no protocol version of the
/// stateless revision, no trace context), no answers to a server's questions, no state to
/// echo.
fn plain(call: &CallToolRequest) -> Option<Option<ProgressToken>> {
    let params = &call.params;
    if params.meta.is_some() || params.input_responses.is_some() || params.request_state.is_some() {
        return None;
    }
    let meta = call.extensions.get::<RequestMetaObject>();
    let others = call.extensions.len() - usize::from(meta.is_some());
    if others > 0 {
        return None;
    }
    let Some(meta) = meta else {
        return Some(None);
    };
    if meta.0.0.keys().any(|key| key != "progressToken") {
        return None;
    }
    match meta.0.0.get("progressToken") {
        None => Some(None),
        Some(_) => meta.get_progress_token().map(Some),
    }
}

fn essence(value: &str) -> &str {
    value.split_once(';').map_or(value, |(e, _)| e).trim()
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| essence(v).eq_ignore_ascii_case("application/json"))
}

fn accepts_json_and_events(headers: &HeaderMap) -> bool {
    let (mut json, mut events) = (false, false);
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for media in value.split(',').map(essence) {
            json |= media.eq_ignore_ascii_case("application/json");
            events |= media.eq_ignore_ascii_case("text/event-stream");
        }
    }
    json && events
}

fn json(message: &ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(message) {
        Ok(body) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response(),
        Err(error) => {
            tracing::error!(error.message = %error, "could not encode a relayed answer");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// `messages` as Server-Sent Events, one `message` event each.
fn event_stream(
    messages: impl futures::Stream<Item = ServerJsonRpcMessage> + Send + 'static,
) -> Response {
    let frames = messages.filter_map(|message| async move {
        let data = serde_json::to_string(&message).ok()?;
        Some(Ok::<_, std::convert::Infallible>(format!(
            "event: message\ndata: {data}\n\n"
        )))
    });
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            ),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        Body::from_stream(frames),
    )
        .into_response()
}
