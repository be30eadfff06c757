//! `strad demo-server`: strad's own MCP Apps server, spoken over stdio, so a first run shows
//! a working app with nothing to install. Local mode registers it as `demo` (see
//! `crate::servers::demo_server`). Its page runs under the frame CSP with one inline
//! script and no network, and uses the bridge the way an SDK-built app does: the opening
//! call's input and result, a read-only call, a writing call (which the console asks the
//! person to approve), `host/resize`, and the Location extension.

mod notes;
mod tools;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

pub use notes::Notes;

/// The app's one resource.
pub const PAGE_URI: &str = "ui://demo/clock.html";
const PAGE_MIME: &str = "text/html;profile=mcp-app";
const PAGE: &str = include_str!("page.html");

/// The demo server's state: the notes written through `add_note`, kept for the life of the
/// process (the console starts one child per server and keeps it).
#[derive(Clone, Default)]
pub struct Demo {
    notes: Notes,
}

/// Serves the demo on stdin/stdout until the client hangs up.
pub async fn serve_stdio() -> anyhow::Result<()> {
    let service = Demo::default()
        .serve(rmcp::transport::io::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("the demo server could not start: {e}"))?;
    service.waiting().await?;
    Ok(())
}

fn from_json<T: serde::de::DeserializeOwned>(value: Value) -> Result<T, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))
}

impl ServerHandler for Demo {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.server_info =
            rmcp::model::Implementation::new("strad-demo", env!("CARGO_PKG_VERSION"));
        info.instructions =
            Some("A clock in the person's own time zone, and a shared list of notes.".into());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let tools = tools::definitions()
            .into_iter()
            .map(from_json)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let result = tools::call(&self.notes, &request.name, &arguments)?;
        Ok(CallToolResponse::Complete(from_json(result)?))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resource = from_json(json!({
            "uri": PAGE_URI,
            "name": "clock",
            "title": "Clock and notes",
            "mimeType": PAGE_MIME,
        }))?;
        Ok(ListResourcesResult::with_all_items(vec![resource]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != PAGE_URI {
            return Err(McpError::resource_not_found(
                format!("no resource {}", request.uri),
                None,
            ));
        }
        let read = json!({"contents": [{
            "uri": PAGE_URI,
            "mimeType": PAGE_MIME,
            "text": PAGE,
            // No network at all: the page asks for no domains.
            "_meta": {"ui": {"prefersBorder": true}},
        }]});
        Ok(ReadResourceResponse::Complete(from_json(read)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::CallToolRequestParams;

    /// The demo over an in-memory pipe, as a client sees it.
    async fn connected() -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
        let (client_end, server_end) = tokio::io::duplex(64 * 1024);
        tokio::spawn(async move {
            let server = Demo::default().serve(server_end).await.expect("serves");
            let _ = server.waiting().await;
        });
        ().serve(client_end).await.expect("the client connects")
    }

    fn call(name: &str, arguments: Value) -> CallToolRequestParams {
        from_json(json!({"name": name, "arguments": arguments})).unwrap()
    }

    #[tokio::test]
    async fn the_display_tool_is_read_only_and_declares_the_page() {
        let client = connected().await;
        let tools = client.list_all_tools().await.unwrap();
        let tools: Vec<Value> = tools
            .iter()
            .map(|t| serde_json::to_value(t).unwrap())
            .collect();
        let show = tools.iter().find(|t| t["name"] == "show_clock").unwrap();
        assert_eq!(show["annotations"]["readOnlyHint"], true);
        assert_eq!(show["_meta"]["ui"]["resourceUri"], PAGE_URI);
        let add = tools.iter().find(|t| t["name"] == "add_note").unwrap();
        assert_ne!(add["annotations"]["readOnlyHint"], true, "add_note writes");
    }

    #[tokio::test]
    async fn the_page_is_one_app_resource_with_one_inline_script_and_no_network() {
        let client = connected().await;
        let read = client
            .read_resource(from_json(json!({"uri": PAGE_URI})).unwrap())
            .await
            .unwrap();
        let read = serde_json::to_value(read).unwrap();
        let content = &read["contents"][0];
        assert_eq!(content["mimeType"], PAGE_MIME);
        let text = content["text"].as_str().unwrap();
        assert_eq!(text.matches("<script").count(), 1);
        assert!(!text.contains("<script src"));
        for network in [
            "fetch(",
            "XMLHttpRequest",
            "WebSocket",
            "http://",
            "https://",
        ] {
            assert!(!text.contains(network), "{network}");
        }
    }

    #[tokio::test]
    async fn a_note_written_is_listed_and_an_empty_one_is_refused() {
        let client = connected().await;
        let added = client
            .call_tool(call("add_note", json!({"text": "  water the plants "})))
            .await
            .unwrap();
        let added = serde_json::to_value(added).unwrap();
        assert_eq!(
            added["structuredContent"]["notes"][0]["text"],
            "water the plants"
        );
        let listed = client
            .call_tool(call("list_notes", json!({})))
            .await
            .unwrap();
        let listed = serde_json::to_value(listed).unwrap();
        assert_eq!(
            listed["structuredContent"]["notes"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        let empty = client
            .call_tool(call("add_note", json!({"text": "   "})))
            .await
            .unwrap();
        assert_eq!(serde_json::to_value(empty).unwrap()["isError"], true);
    }
}
