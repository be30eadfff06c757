//! The MCP methods `/mcp` answers through rmcp: listing and reading what the caller may
//! reach, each under its relayed name.

use app::entitlements::policy::{Decision, Surface};
use app::entitlements::ssr::authorize;
use app::servers::Capability;
use app::servers::ssr::changes::ItemKind;
use app::servers::ssr::registry::{self, ServerRow};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::namespacing::{
    namespaced, original_resource_uri, original_uri, relay_plain, relayed_resource_uri,
    relayed_uri, rewrite_tool_meta, split_name,
};
use super::scope::{approved, caller_of, parts_of};
use super::{Relay, denied, internal, sessions_only};

impl ServerHandler for Relay {
    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::DiscoverResult, McpError> {
        Err(McpError::method_not_found::<
            rmcp::model::DiscoverRequestMethod,
        >())
    }

    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
        let mut info = ServerConfig::new(capabilities);
        info.server_info = rmcp::model::Implementation::new("strad", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "strad relays the MCP servers you are entitled to. Tool names are <server>__<tool>."
                .into(),
        );
        info
    }

    /// The client is ready: from now on its plain tool calls may be answered without the
    /// session worker.
    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        if let Some(open) = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| self.state.mcp_open.named_by(&parts.headers))
        {
            open.mark_initialized();
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let (caller, servers) = self.scope(&context).await?;
        let pool = &self.state.app.pool;
        let ctx = &caller.ctx;
        let mut tools = Vec::new();
        for server in servers.iter().filter(|s| s.approves(Capability::Tools)) {
            for item in registry::items(pool, &server.slug)
                .await
                .map_err(internal)?
            {
                if item.kind != ItemKind::Tool {
                    continue;
                }
                let decision =
                    authorize::decision(pool, ctx, &server.slug, &item.key, Surface::McpClient)
                        .await
                        .map_err(internal)?;
                if decision != Decision::Run {
                    continue;
                }
                let Ok(mut definition) = serde_json::from_slice::<Value>(&item.body) else {
                    continue;
                };
                definition["name"] = Value::String(namespaced(&server.slug, &item.key));
                rewrite_tool_meta(
                    &mut definition,
                    &server.slug,
                    server.approves(Capability::Apps),
                );
                if let Ok(tool) = serde_json::from_value(definition) {
                    tools.push(tool);
                }
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if context.meta.protocol_version().is_some() {
            return Err(sessions_only());
        }
        let caller = caller_of(&context)?;
        let hub = self.hub(&context)?;
        let query = parts_of(&context)?.uri.query();
        // Progress comes back under the caller's own token.
        let token = context.meta.get_progress_token();
        let (sink, mut steps) = tokio::sync::mpsc::unbounded_channel();
        let call = self.call(
            caller,
            query,
            &hub,
            request,
            token.is_some().then_some(sink),
            context.ct.cancelled(),
        );
        let forward = async {
            while let Some(mut step) = steps.recv().await {
                if let Some(token) = &token {
                    step.progress_token = token.clone();
                    let _ = context.peer.notify_progress(step).await;
                }
            }
        };
        tokio::join!(call, forward).0
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let (_caller, servers) = self.scope(&context).await?;
        let hub = self.hub(&context)?;
        let mut prompts = Vec::new();
        for server in servers.iter().filter(|s| s.approves(Capability::Prompts)) {
            let Some(endpoint) = server.endpoint() else {
                continue;
            };
            // One server failing leaves the others' prompts listed.
            let Ok(listed) = hub.list_prompts(&server.slug, &endpoint).await else {
                continue;
            };
            for mut prompt in listed {
                let Some(name) = prompt.get("name").and_then(Value::as_str) else {
                    continue;
                };
                prompt["name"] = Value::String(namespaced(&server.slug, name));
                if let Ok(prompt) = serde_json::from_value(prompt) {
                    prompts.push(prompt);
                }
            }
        }
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let (_caller, servers) = self.scope(&context).await?;
        let Some((slug, name)) = split_name(&request.name) else {
            return Err(denied("No such prompt."));
        };
        let endpoint = approved(&servers, slug, Capability::Prompts, "No such prompt.")?;
        let value = self
            .hub(&context)?
            .get_prompt(slug, &endpoint, name, request.arguments.clone())
            .await
            .map_err(|e| {
                McpError::internal_error(format!("the server could not answer: {e}"), None)
            })?;
        let result: GetPromptResult = serde_json::from_value(value).map_err(internal)?;
        Ok(GetPromptResponse::Complete(result))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let (_caller, servers) = self.scope(&context).await?;
        let pool = &self.state.app.pool;
        let hub = &self.hub(&context)?;
        let mut resources = Vec::new();
        // A server approved for resources: its own (not ui://) resources, live, under
        // strad://. One server failing leaves the others' listed.
        for server in servers.iter().filter(|s| s.approves(Capability::Resources)) {
            let Some(endpoint) = server.endpoint() else {
                continue;
            };
            let Ok(listed) = hub.list_resources(&server.slug, &endpoint).await else {
                continue;
            };
            resources.extend(
                relay_plain(&server.slug, listed, "uri")
                    .filter_map(|entry| serde_json::from_value(entry).ok()),
            );
        }
        // App resources: those discovery validated, from servers approved for apps.
        for server in servers.iter().filter(|s| s.approves(Capability::Apps)) {
            for item in registry::items(pool, &server.slug)
                .await
                .map_err(internal)?
            {
                if item.kind != ItemKind::AppResource {
                    continue;
                }
                let Some(uri) = relayed_uri(&server.slug, &item.key) else {
                    continue;
                };
                let entry = json!({
                    "uri": uri,
                    "name": format!("{} {}", server.slug, item.key),
                    "mimeType": app::servers::ssr::discovery::APP_MIME_TYPE,
                });
                if let Ok(resource) = serde_json::from_value(entry) {
                    resources.push(resource);
                }
            }
        }
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let (_caller, servers) = self.scope(&context).await?;
        let hub = &self.hub(&context)?;
        let mut templates = Vec::new();
        for server in servers.iter().filter(|s| s.approves(Capability::Resources)) {
            let Some(endpoint) = server.endpoint() else {
                continue;
            };
            let Ok(listed) = hub.list_resource_templates(&server.slug, &endpoint).await else {
                continue;
            };
            templates.extend(
                relay_plain(&server.slug, listed, "uriTemplate")
                    .filter_map(|entry| serde_json::from_value(entry).ok()),
            );
        }
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let (_caller, servers) = self.scope(&context).await?;
        if let Some((slug, inner)) = original_resource_uri(&request.uri) {
            return self
                .read_plain_resource(&*self.hub(&context)?, &servers, slug, inner)
                .await;
        }
        let Some((slug, inner)) = original_uri(&request.uri) else {
            return Err(denied(
                "No such resource: URIs are ui://<server>/… or strad://<server>/…",
            ));
        };
        let endpoint = approved(&servers, slug, Capability::Apps, "No such resource.")?;
        let hub = &self.hub(&context)?;
        let read = hub
            .read_resource(slug, &endpoint, &inner)
            .await
            .map_err(|e| {
                McpError::internal_error(format!("the server could not read it: {e}"), None)
            })?;
        app::servers::ssr::discovery::app_resource(
            &inner,
            None,
            &read,
            hub.settings().resource_limit,
        )
        .map_err(|problem| denied(&format!("not a valid app resource: {problem}")))?;
        let mut read = read;
        if let Some(contents) = read.get_mut("contents").and_then(Value::as_array_mut) {
            for content in contents {
                if let Some(uri) = content
                    .get("uri")
                    .and_then(Value::as_str)
                    .and_then(|u| relayed_uri(slug, u))
                {
                    content["uri"] = Value::String(uri);
                }
            }
        }
        let result: ReadResourceResult = serde_json::from_value(read).map_err(internal)?;
        Ok(ReadResourceResponse::Complete(result))
    }
}

impl Relay {
    /// `resources/read` of a server's own (not app) resource, for a server approved for
    /// resources, within the resource byte limit.
    async fn read_plain_resource(
        &self,
        hub: &app::servers::ssr::client::Hub,
        servers: &[ServerRow],
        slug: &str,
        inner: &str,
    ) -> Result<ReadResourceResponse, McpError> {
        let endpoint = approved(servers, slug, Capability::Resources, "No such resource.")?;
        let mut read = hub
            .read_resource(slug, &endpoint, inner)
            .await
            .map_err(|e| {
                McpError::internal_error(format!("the server could not read it: {e}"), None)
            })?;
        if let Some(contents) = read.get_mut("contents").and_then(Value::as_array_mut) {
            contents.retain(|content| {
                content
                    .get("uri")
                    .and_then(Value::as_str)
                    .is_none_or(|uri| !uri.starts_with("ui://"))
            });
            for content in contents {
                if let Some(uri) = content.get("uri").and_then(Value::as_str) {
                    content["uri"] = Value::String(relayed_resource_uri(slug, uri));
                }
            }
        }
        let result: ReadResourceResult = serde_json::from_value(read).map_err(internal)?;
        Ok(ReadResourceResponse::Complete(result))
    }
}
