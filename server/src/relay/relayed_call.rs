//! A relayed `tools/call`: the same checks and audit row as every tool call, answered as
//! MCP answers.

use app::entitlements::policy::Surface;
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult};

use super::namespacing::split_name;
use super::{Caller, Relay, denied, internal};
use crate::tool_call::{CallError, ToolCall};

impl Relay {
    /// `tools/call` of `request` for `caller`, with upstream sessions of `hub`: the checks
    /// and the audit row of every relayed call. The server's progress goes to `progress`
    /// (under the upstream call's token); when `cancelled` resolves first, the upstream call
    /// is dropped, which tells the server it is cancelled.
    pub(super) async fn call(
        &self,
        caller: &Caller,
        query: Option<&str>,
        hub: &app::servers::ssr::client::Hub,
        request: CallToolRequestParams,
        progress: Option<app::servers::ssr::client::ProgressSink>,
        cancelled: impl std::future::Future<Output = ()>,
    ) -> Result<CallToolResponse, McpError> {
        let Some((slug, tool)) = split_name(&request.name) else {
            return Err(denied("No such tool: names are <server>__<tool>."));
        };
        let pool = &self.state.app.pool;
        // Both at once (two connections): the decision is read for the slug named, and used
        // only once the slug is among the caller's.
        let (scope, decision) = tokio::join!(
            self.reachable(caller, query),
            self.state.memos.decision(
                pool,
                caller.ctx.session_kind,
                slug,
                tool,
                Surface::McpClient
            ),
        );
        let servers = scope?;
        let decision = decision.map_err(internal)?;
        let Some(server) = servers.iter().find(|s| s.slug == slug) else {
            return Err(denied("No such tool."));
        };
        let call = ToolCall {
            surface: Surface::McpClient,
            slug: slug.to_owned(),
            tool: tool.to_owned(),
            arguments: request.arguments.unwrap_or_default(),
            bytes_in: 0,
            approval: None,
        };
        let answered = call
            .run(
                &self.state,
                &caller.caller(),
                server,
                decision,
                hub,
                progress,
                cancelled,
            )
            .await;
        match answered {
            Ok(answer) => Ok(CallToolResponse::Complete(answer.result)),
            Err(CallError::Refused(message)) => Err(denied(&message)),
            Err(CallError::Cancelled) => {
                Err(McpError::internal_error("The request was cancelled.", None))
            }
            Err(CallError::NotRecorded) => Err(internal("a call's audit row was not committed")),
            // The server's failure is the tool's error result, as a server's own would be.
            Err(error) => Ok(CallToolResponse::Complete(CallToolResult::error(vec![
                rmcp::model::ContentBlock::text(error.message()),
            ]))),
        }
    }
}
