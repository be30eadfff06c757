//! `/mcp` (SPEC §9): the servers a person is entitled to, relayed to any MCP client under
//! their login token. Built on rmcp's Streamable HTTP server. Every request is authenticated
//! by `Authorization: Bearer <login token>` (401 with `WWW-Authenticate` otherwise);
//! `?servers=a,b` selects slugs (all entitled ones when absent); names are namespaced per slug
//! (`<slug>__<tool>`, `ui://<slug>/<rest>` for app resources, `strad://<slug>/<uri>` for the
//! rest) and mapped back on the way in; entitlements and the tool policy apply exactly as in
//! the console (surface "MCP client": visibility must include "model"); every call is audited
//! as `mcp_tool_call`. A call's progress notifications come back under the caller's token,
//! and a cancelled call is cancelled upstream.

use std::sync::Arc;

use app::entitlements::policy::{Decision, Surface};
use app::entitlements::ssr::authorize;
use app::servers::Capability;
use app::servers::ssr::changes::ItemKind;
use app::servers::ssr::registry::{self, ServerRow};
use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::state::ServerState;
use crate::tool_call::{CallError, ToolCall};

mod fast;
mod in_flight;
mod rate_limits;
pub mod sessions;

pub use rate_limits::RateLimits;

/// Separates a slug from a tool name (slugs are `[a-z0-9-]`, so it cannot occur in one).
pub const SEPARATOR: &str = "__";

/// Who is calling: the owner of a valid login token, as the console would see them (their
/// session kind is "browser": a login token on /mcp is the surface the token is for; the
/// surface itself says MCP client).
#[derive(Clone, Debug)]
pub struct Caller {
    pub token_id: Uuid,
    pub ctx: app::auth::ssr::context::RequestContext,
}

impl Caller {
    /// The caller as every tool call knows it.
    fn caller(&self) -> crate::tool_call::Caller {
        crate::tool_call::Caller {
            user_id: self.ctx.user.id,
            email: self.ctx.user.email.clone(),
            token_id: Some(self.token_id),
            session_binding: None,
        }
    }
}

/// `<slug>__<tool>`.
pub fn namespaced(slug: &str, tool: &str) -> String {
    format!("{slug}{SEPARATOR}{tool}")
}

/// The slug and tool of a namespaced name; `None` when it is not one.
pub fn split_name(name: &str) -> Option<(&str, &str)> {
    let (slug, tool) = name.split_once(SEPARATOR)?;
    (app::servers::is_valid_slug(slug) && !tool.is_empty()).then_some((slug, tool))
}

/// `ui://x/y` of `slug` as the client sees it: `ui://<slug>/x/y`.
pub fn relayed_uri(slug: &str, uri: &str) -> Option<String> {
    uri.strip_prefix("ui://")
        .map(|rest| format!("ui://{slug}/{rest}"))
}

/// The slug and the server's own URI of a relayed `ui://` URI.
pub fn original_uri(uri: &str) -> Option<(&str, String)> {
    let rest = uri.strip_prefix("ui://")?;
    let (slug, inner) = rest.split_once('/')?;
    (app::servers::is_valid_slug(slug) && !inner.is_empty())
        .then(|| (slug, format!("ui://{inner}")))
}

/// Any other resource of `slug` as the client sees it: `strad://<slug>/<its own URI>`.
/// Clients treat resource URIs as opaque, so the server's URI rides along unchanged.
pub fn relayed_resource_uri(slug: &str, uri: &str) -> String {
    format!("{RESOURCE_SCHEME}{slug}/{uri}")
}

/// The slug and the server's own URI of a relayed `strad://` URI (never a `ui://` one: app
/// resources are reached only under `ui://`, and only from servers approved for apps).
pub fn original_resource_uri(uri: &str) -> Option<(&str, &str)> {
    let (slug, inner) = uri.strip_prefix(RESOURCE_SCHEME)?.split_once('/')?;
    (app::servers::is_valid_slug(slug) && !inner.is_empty() && !inner.starts_with("ui://"))
        .then_some((slug, inner))
}

const RESOURCE_SCHEME: &str = "strad://";

/// A server's own resources or templates (`field` holds their URI) as the client sees them,
/// under `strad://<slug>/`; app (`ui://`) ones are left out.
fn relay_plain<'a>(
    slug: &'a str,
    listed: Vec<Value>,
    field: &'a str,
) -> impl Iterator<Item = Value> + 'a {
    listed.into_iter().filter_map(move |mut entry| {
        let uri = entry.get(field)?.as_str()?;
        if uri.starts_with("ui://") {
            return None;
        }
        entry[field] = Value::String(relayed_resource_uri(slug, uri));
        Some(entry)
    })
}

pub fn routes(state: ServerState) -> Router<ServerState> {
    let origin = state.config.http.public_origin();
    let authority = origin
        .split_once("://")
        .map(|(_, a)| a.to_owned())
        .unwrap_or_default();
    let host = authority
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map(|(h, _)| h.to_owned())
        .unwrap_or_else(|| authority.clone());
    let gate = fast::Gate {
        hosts: [host.clone(), authority.clone()],
        origin: origin.clone(),
    };
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts([host, authority])
        .with_allowed_origins([origin]);
    let relay = Relay {
        state: Arc::new(state.clone()),
    };
    let sessions = state.mcp_open.clone();
    let factory = relay.clone();
    let service = StreamableHttpService::new(move || Ok(factory.clone()), sessions, config);
    let front = Arc::new(Front { relay, gate });
    Router::new()
        .nest_service("/mcp", Shared(Arc::new(service)))
        .layer(axum::middleware::from_fn_with_state(front, authenticate))
}

/// What every `/mcp` request is checked and answered with, shared (one reference counted
/// per request, not the state's every field).
struct Front {
    relay: Relay,
    gate: fast::Gate,
}

/// rmcp's service behind one `Arc`: axum clones a service for every request, and rmcp's
/// clone copies its configuration (the allowed hosts and origins) each time.
#[derive(Clone)]
struct Shared(Arc<StreamableHttpService<Relay, sessions::Sessions>>);

impl tower::Service<Request> for Shared {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response, std::convert::Infallible>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let service = self.0.clone();
        Box::pin(async move { Ok(service.handle(request).await.map(axum::body::Body::new)) })
    }
}

fn unauthorized(message: &str) -> Response {
    let mut response = (
        StatusCode::UNAUTHORIZED,
        axum::Json(json!({"error": message})),
    )
        .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(
            "Bearer realm=\"strad\", error=\"invalid_token\", error_description=\"a login token from /tokens is required\"",
        ),
    );
    response
}

/// A refusal the client may retry after `retry_after` seconds.
fn retry_later(status: StatusCode, message: &str, retry_after: &'static str) -> Response {
    let mut response = (status, axum::Json(json!({"error": message}))).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static(retry_after));
    response
}

/// Every `/mcp` request: a valid login token as a Bearer header, within its owner's rate. A plain
/// `tools/call` in an open session is then answered here (`fast.rs`); everything else by
/// rmcp's Streamable HTTP server.
async fn authenticate(State(front): State<Arc<Front>>, request: Request, next: Next) -> Response {
    let state = &*front.relay.state;
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .map(str::to_owned);
    let Some(token) = token else {
        return unauthorized("Send a login token as `Authorization: Bearer strad_…`.");
    };
    let pool = &state.app.pool;
    let crate::memo::TokenOwner {
        token_id,
        user,
        roles,
        ..
    } = match state.memos.token(pool, &token).await {
        Ok(Some(owner)) => owner,
        Ok(None) => return unauthorized("This login token is unknown, expired or revoked."),
        Err(error) => {
            tracing::error!(error.message = %error, "could not check a login token");
            return (StatusCode::SERVICE_UNAVAILABLE, "try again").into_response();
        }
    };
    // Limited by person, not by token: minting more tokens buys no more requests.
    if !state.mcp_rates.allow(user.id) {
        return retry_later(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests from your login tokens; slow down.",
            "1",
        );
    }
    // A request without a session id opens a client session (it must be `initialize`).
    let opens_session = request.method() == axum::http::Method::POST
        && !request.headers().contains_key("mcp-session-id");
    if opens_session && !state.mcp_sessions.allow(user.id) {
        return retry_later(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many new sessions from your login tokens; reuse a session, or end the ones you no longer need.",
            "6",
        );
    }
    if opens_session && !state.mcp_open.has_room() {
        return retry_later(
            StatusCode::SERVICE_UNAVAILABLE,
            "strad holds as many MCP sessions as it may; try again shortly.",
            "30",
        );
    }
    // A session is its opener's: the first request to name it binds it to that request's
    // token (only the opener has seen its id), and another token naming it hears what an
    // unknown session hears.
    let open = state.mcp_open.named_by(request.headers());
    if open.as_ref().is_some_and(|open| !open.belongs_to(token_id)) {
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let caller = Caller {
        token_id,
        ctx: app::auth::ssr::context::RequestContext {
            user,
            roles,
            session_kind: app::auth::ssr::session::SessionKind::Browser,
        },
    };
    let answered = fast::answer(&front.gate, &front.relay, &caller, open, request).await;
    let mut request = match answered {
        Ok(answered) => return answered,
        Err(request) => request,
    };
    request.extensions_mut().insert(caller);
    next.run(request).await
}

#[derive(Clone)]
pub(crate) struct Relay {
    state: Arc<ServerState>,
}

fn denied(message: &str) -> McpError {
    McpError::invalid_params(message.to_owned(), None)
}

/// `/mcp` serves client sessions (`initialize`, protocol 2025-11-25 and before): each has
/// its own upstream sessions, closed with it, and counts against the token's sessions. A
/// request of the stateless revision (2026-07-28, its protocol version in its own `_meta`)
/// would open and drop all of that on every call, so it is refused with a clear error, and
/// `server/discover` is answered as a server of the session revisions answers it: the
/// method is not found, and a client that can falls back to `initialize`.
fn sessions_only() -> McpError {
    McpError::invalid_request(
        "strad's /mcp serves MCP sessions: connect with initialize (protocol 2025-11-25 or before)",
        None,
    )
}

fn internal(error: impl std::fmt::Display) -> McpError {
    tracing::error!(error.message = %error, "the relay failed");
    McpError::internal_error("strad could not answer", None)
}

impl Relay {
    /// The caller and the slugs this request may reach (entitled, enabled, and among
    /// `?servers=` when given).
    async fn scope<'c>(
        &self,
        context: &'c RequestContext<RoleServer>,
    ) -> Result<(&'c Caller, Vec<ServerRow>), McpError> {
        if context.meta.protocol_version().is_some() {
            return Err(sessions_only());
        }
        let parts = parts_of(context)?;
        let caller = caller_of(context)?;
        let servers = self.reachable(caller, parts.uri.query()).await?;
        Ok((caller, servers))
    }

    /// The slugs `caller` may reach on a request of `query` (entitled, enabled, and among
    /// `?servers=` when given).
    async fn reachable(
        &self,
        caller: &Caller,
        query: Option<&str>,
    ) -> Result<Vec<ServerRow>, McpError> {
        let asked: Option<Vec<String>> = query.and_then(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .find(|(k, _)| k == "servers")
                .map(|(_, v)| {
                    v.split(',')
                        .map(|s| s.trim().to_owned())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
        });
        self.state
            .memos
            .reachable(
                &self.state.app.pool,
                &caller.ctx.user.email,
                asked.as_deref(),
            )
            .await
            .map_err(internal)
    }

    /// The upstream sessions of the client session this request is in.
    fn hub(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<app::servers::ssr::client::Hub>, McpError> {
        self.state
            .mcp_open
            .named_by(&parts_of(context)?.headers)
            .map(|open| open.hub.clone())
            .ok_or_else(|| internal("no open session"))
    }

    /// `tools/call` of `request` for `caller`, with upstream sessions of `hub`: the checks
    /// and the audit row of every relayed call. The server's progress goes to `progress`
    /// (under the upstream call's token); when `cancelled` resolves first, the upstream call
    /// is dropped, which tells the server it is cancelled.
    async fn call(
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

/// The endpoint of `slug` among the caller's `servers` when it is approved for `capability`;
/// otherwise `missing`, the same answer whether the slug is unknown, not the caller's, or
/// not approved.
fn approved(
    servers: &[ServerRow],
    slug: &str,
    capability: Capability,
    missing: &str,
) -> Result<app::servers::ssr::client::Endpoint, McpError> {
    let server = servers
        .iter()
        .find(|s| s.slug == slug && s.approves(capability))
        .ok_or_else(|| denied(missing))?;
    server.endpoint().ok_or_else(|| internal("no endpoint"))
}

/// The HTTP request rmcp put on the request's context.
fn parts_of(context: &RequestContext<RoleServer>) -> Result<&axum::http::request::Parts, McpError> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .ok_or_else(|| internal("no request parts"))
}

/// The caller `authenticate` put on the HTTP request.
fn caller_of(context: &RequestContext<RoleServer>) -> Result<&Caller, McpError> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Caller>())
        .ok_or_else(|| internal("no caller"))
}

/// Points a tool's app resource at the relayed URI (both metadata keys), or removes it when
/// the server may not show apps.
fn rewrite_tool_meta(definition: &mut Value, slug: &str, apps: bool) {
    let Some(meta) = definition.get_mut("_meta").and_then(Value::as_object_mut) else {
        return;
    };
    let rewrite = |value: &mut Value| {
        if let Some(uri) = value
            .as_str()
            .and_then(|u| if apps { relayed_uri(slug, u) } else { None })
        {
            *value = Value::String(uri);
            true
        } else {
            false
        }
    };
    if let Some(flat) = meta.get_mut("ui/resourceUri")
        && !rewrite(flat)
    {
        meta.remove("ui/resourceUri");
    }
    if let Some(ui) = meta.get_mut("ui").and_then(Value::as_object_mut)
        && let Some(uri) = ui.get_mut("resourceUri")
        && !rewrite(uri)
    {
        ui.remove("resourceUri");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_uris_are_namespaced_and_mapped_back() {
        assert_eq!(namespaced("clock", "get-time"), "clock__get-time");
        assert_eq!(split_name("clock__get-time"), Some(("clock", "get-time")));
        assert_eq!(split_name("clock__a__b"), Some(("clock", "a__b")));
        assert_eq!(split_name("get-time"), None);
        assert_eq!(split_name("Bad_Slug__x"), None);
        assert_eq!(split_name("clock__"), None);
        assert_eq!(
            relayed_uri("clock", "ui://clock/app.html").as_deref(),
            Some("ui://clock/clock/app.html")
        );
        assert_eq!(
            original_uri("ui://clock/clock/app.html"),
            Some(("clock", "ui://clock/app.html".into()))
        );
        assert_eq!(original_uri("ui://clock"), None);
        assert_eq!(original_uri("https://clock/x"), None);
        assert_eq!(relayed_uri("clock", "https://x"), None);
        assert_eq!(
            relayed_resource_uri("clock", "file:///a/b.txt"),
            "strad://clock/file:///a/b.txt"
        );
        assert_eq!(
            original_resource_uri("strad://clock/file:///a/b.txt"),
            Some(("clock", "file:///a/b.txt"))
        );
        assert_eq!(
            original_resource_uri("strad://clock/ui://x/app.html"),
            None,
            "app resources are not reachable around the apps approval"
        );
        assert_eq!(original_resource_uri("strad://Clock/x"), None);
        assert_eq!(original_resource_uri("strad://clock/"), None);
    }

    #[test]
    fn tool_meta_points_at_the_relayed_resource() {
        let mut tool = json!({"name": "t", "_meta": {"ui": {"resourceUri": "ui://a/b.html", "visibility": ["model"]}, "ui/resourceUri": "ui://a/b.html"}});
        rewrite_tool_meta(&mut tool, "s", true);
        assert_eq!(tool["_meta"]["ui"]["resourceUri"], "ui://s/a/b.html");
        assert_eq!(tool["_meta"]["ui/resourceUri"], "ui://s/a/b.html");
        rewrite_tool_meta(&mut tool, "s", false);
        assert!(tool["_meta"]["ui"].get("resourceUri").is_none());
        assert!(tool["_meta"].get("ui/resourceUri").is_none());
    }
}
