//! A server's `tools/call`: never retried, posted straight into the session where it can
//! be, its progress reported and its cancellation passed on.

use std::sync::Arc;
use std::time::Instant;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, GetExtensions, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;

use super::super::direct::Listeners;
use super::plain_failures::service_error;
use super::progress_routing::{InFlight, RouteProgress};
use super::{Connection, Endpoint, Hub, McpError, ProgressSink, ToolAnswer, to_text};
use crate::metrics;

impl Hub {
    /// One `tools/call`, its result as JSON. Never retried: a tool may write, and a retry
    /// could run it twice.
    pub async fn call_tool(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<Value, McpError> {
        let answer = self
            .call_tool_answer(slug, endpoint, name, arguments)
            .await?;
        serde_json::from_str(&answer.json).map_err(|e| McpError::Malformed(e.to_string()))
    }

    /// One `tools/call`, its result as it came and as the JSON text strad passes on.
    pub async fn call_tool_answer(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<ToolAnswer, McpError> {
        self.call_tool_reporting(slug, endpoint, name, arguments, None)
            .await
    }

    /// One `tools/call` whose progress notifications go to `progress` as they come (a
    /// direct call carries a progress token only then; rmcp's always does). Dropping the
    /// future cancels the call upstream (`notifications/cancelled`), and records nothing.
    pub async fn call_tool_reporting(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        name: &str,
        arguments: serde_json::Map<String, Value>,
        progress: Option<ProgressSink>,
    ) -> Result<ToolAnswer, McpError> {
        let started = Instant::now();
        let answer = self
            .send_tool_call(slug, endpoint, name, arguments, progress)
            .await;
        metrics::upstream(slug, "tools/call", started.elapsed(), &answer);
        answer
    }

    async fn send_tool_call(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        name: &str,
        arguments: serde_json::Map<String, Value>,
        progress: Option<ProgressSink>,
    ) -> Result<ToolAnswer, McpError> {
        let limit = self.settings.response_limit;
        let connection = self.connection(slug, endpoint).await?;
        if let Some(direct) = connection
            .direct
            .as_ref()
            .filter(|_| self.settings.direct_tool_calls)
        {
            let listeners = Listeners {
                progress: progress.as_ref(),
                changes: &self.changes,
                slug,
            };
            let outcome = self
                .timed(direct.call(name, &arguments, listeners, limit))
                .await;
            // `None`: nothing ran, and the call is rmcp's to make.
            if let Some(answer) = self.settled(slug, &connection, outcome).await? {
                return Ok(answer);
            }
        }
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let peer = connection.service.peer().clone();
        let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        if let Some(sink) = progress {
            let route = RouteProgress(Arc::new(std::sync::Mutex::new(Some(sink))));
            request.extensions_mut().insert(route);
        }
        let request = async {
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await?;
            let in_flight = InFlight {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
                routes: connection.progress.clone(),
                token: handle.progress_token.clone(),
            };
            let answer = handle.await_response().await;
            in_flight.answered();
            match answer? {
                ServerResult::CallToolResult(result) => Ok(result),
                _ => Err(ServiceError::UnexpectedResponse),
            }
        };
        let outcome = self.timed(request).await.map(|r| r.map_err(service_error));
        let result = self.settled(slug, &connection, outcome).await?;
        let json = to_text(&result, limit)?;
        Ok(ToolAnswer { result, json })
    }

    /// A tool call's outcome (a timeout outside, the call's own failure inside). Any failure
    /// but the server's own error answer or an answer over the limit may mean a broken
    /// connection, which is dropped so the next call opens a new one.
    pub(super) async fn settled<T>(
        &self,
        slug: &str,
        connection: &Arc<Connection>,
        outcome: Result<Result<T, McpError>, McpError>,
    ) -> Result<T, McpError> {
        let err = match outcome.and_then(|inner| inner) {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        if !matches!(err, McpError::Server(_) | McpError::TooLarge { .. }) {
            self.forget_connection(slug, connection).await;
        }
        Err(err)
    }
}
