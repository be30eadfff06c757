//! strad's MCP client: one rmcp connection per server, reused across requests, rebuilt
//! after a failure (a restarted server is reached again on the next request). Every request
//! has a timeout; every answer is checked against a byte limit. A failing server gives a
//! clear error and never takes the console or another server down. A tool call to an HTTP
//! server is posted straight into the session the connection opened (`direct.rs`), and
//! made through rmcp only when it cannot be.
//!
//! A stdio server is a process strad starts, so its connections are shared: the console's
//! hub and every `/mcp` client session's (`Hub::sibling`) reach it through at most
//! `HubSettings::stdio_children` processes, each hub keeping to one of them (their JSON-RPC
//! ids and progress tokens are the connection's own, so many callers share one process).
//! An HTTP server's connections are each hub's own.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientCapabilities, ClientJsonRpcMessage, ClientRequest, GetExtensions, GetMeta,
    Implementation, InitializeRequestParams, JsonRpcMessage, ProgressNotificationParam,
    ProgressToken, ReadResourceRequestParams, RequestId, ServerJsonRpcMessage, ServerNotification,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::{TokioChildProcess, Transport};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::sync::mpsc;

use super::child_environment::{DeclaredEnv, child_environment};
use super::direct::{Direct, Listeners, Negotiated};

/// The UI extension strad advertises at initialize (SEP-1724 key of MCP Apps).
pub const UI_EXTENSION: &str = "io.modelcontextprotocol/ui";

#[derive(Clone, Debug)]
pub struct HubSettings {
    pub request_timeout: Duration,
    /// Largest answer accepted for an app resource (SPEC §4 default 8 MiB).
    pub resource_limit: usize,
    /// Largest answer accepted for anything else (lists, tool results).
    pub response_limit: usize,
    /// Tool calls to HTTP servers are posted straight into the session (`direct.rs`);
    /// false makes them through rmcp's client.
    pub direct_tool_calls: bool,
    /// Processes a stdio server runs as at most, shared by a hub and all its siblings (the
    /// console and every `/mcp` client session): without a bound, each client session
    /// would start processes of its own.
    pub stdio_children: usize,
    /// The `env` each stdio server declares; the rest of strad's environment never reaches
    /// one (`child_environment.rs`).
    pub stdio_env: DeclaredEnv,
}

impl Default for HubSettings {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(30),
            resource_limit: 8 * 1024 * 1024,
            response_limit: 16 * 1024 * 1024,
            direct_tool_calls: true,
            stdio_children: 4,
            stdio_env: DeclaredEnv::default(),
        }
    }
}

/// How to reach a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Http {
        url: String,
    },
    /// Only from the configuration file: the UI never starts a process.
    Stdio {
        command: Vec<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum McpError {
    #[error("could not connect: {0}")]
    Connect(String),
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    #[error("the server answered with an error: {0}")]
    Server(String),
    #[error("the connection failed: {0}")]
    Transport(String),
    #[error("the answer is larger than the {limit}-byte limit")]
    TooLarge { limit: usize },
    #[error("the answer is malformed: {0}")]
    Malformed(String),
}

/// Receives list_changed notifications: a server's slug each time it says its tools or
/// resources changed, so discovery can run again.
pub type ChangeSender = mpsc::UnboundedSender<String>;

/// Receives the progress notifications of one `tools/call` while it runs (their token is
/// the upstream request's own; the receiver puts its caller's back).
pub type ProgressSink = mpsc::UnboundedSender<ProgressNotificationParam>;

/// The calls of one connection that want their progress, by the token strad sent upstream.
type ProgressRoutes = Arc<std::sync::Mutex<HashMap<ProgressToken, ProgressSink>>>;

#[derive(Clone)]
struct Handler {
    slug: String,
    changes: ChangeSender,
}

/// What strad says of itself at initialize: its name and version, and the UI extension.
pub fn client_info() -> InitializeRequestParams {
    let mut capabilities = ClientCapabilities::default();
    let mut ui = serde_json::Map::new();
    ui.insert(
        "mimeTypes".into(),
        Value::from(vec![super::discovery::APP_MIME_TYPE]),
    );
    capabilities.extensions = Some([(UI_EXTENSION.to_string(), ui)].into_iter().collect());
    InitializeRequestParams::new(
        capabilities,
        Implementation::new("strad", env!("CARGO_PKG_VERSION")),
    )
}

impl ClientHandler for Handler {
    fn get_info(&self) -> InitializeRequestParams {
        client_info()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(self.slug.clone());
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(self.slug.clone());
    }
}

/// Where one request's progress goes, carried in its extensions (never sent). The routing
/// transport takes the sink out as the request leaves, so no copy of the message keeps it.
#[derive(Clone)]
struct RouteProgress(Arc<std::sync::Mutex<Option<ProgressSink>>>);

/// A connection's transport, which routes progress in the order the server sent it: a
/// call's sink is registered as its request leaves, and each progress notification reaches
/// its sink as it is read, before the answer read after it. (rmcp hands notifications to
/// the handler on tasks of their own, which may run after the answer was delivered.)
struct Routed<T> {
    inner: T,
    routes: ProgressRoutes,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Routed<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        if let JsonRpcMessage::Request(request) = &item
            && let Some(RouteProgress(sink)) = request.request.extensions().get::<RouteProgress>()
            && let Some(sink) = lock(sink).take()
            && let Some(token) = request.request.get_meta().get_progress_token()
        {
            lock(&self.routes).insert(token, sink);
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ServerJsonRpcMessage> {
        let message = self.inner.receive().await?;
        if let JsonRpcMessage::Notification(notification) = &message
            && let ServerNotification::ProgressNotification(progress) = &notification.notification
            && let Some(sink) = lock(&self.routes).get(&progress.params.progress_token)
        {
            let _ = sink.send(progress.params.clone());
        }
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct Connection {
    endpoint: Endpoint,
    service: RunningService<RoleClient, Handler>,
    progress: ProgressRoutes,
    /// Tool calls posted straight to an HTTP server, in the session `service` opened.
    direct: Option<Direct>,
}

/// One `tools/call` in flight upstream: while it lives its progress is routed to its sink;
/// dropped before the answer came (the caller cancelled, or the timeout struck), it tells
/// the server the request is cancelled.
struct InFlight {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl InFlight {
    fn answered(mut self) {
        self.id = None;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        lock(&self.routes).remove(&self.token);
        // (Outside a runtime, as when one shuts down, there is nobody left to tell.)
        if let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current()) {
            let peer = self.peer.clone();
            let cancelled = CancelledNotificationParam::new(
                Some(id),
                Some("the caller cancelled the request".into()),
            );
            runtime.spawn(async move {
                let _ = peer.notify_cancelled(cancelled).await;
            });
        }
    }
}

/// Connections by slug.
#[derive(Default)]
struct Connections {
    /// The live ones: read on every request, written only to add or drop one.
    live: std::sync::RwLock<HashMap<String, Arc<Connection>>>,
    /// One gate per slug, so connecting to a slow server holds up only its own callers.
    connecting: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

/// The stdio servers' processes of a hub and its siblings: one set of connections per
/// process a server may run as, and the next one a new sibling keeps to.
struct StdioChildren {
    seats: Box<[Connections]>,
    next: AtomicUsize,
}

pub struct Hub {
    settings: HubSettings,
    changes: ChangeSender,
    /// HTTP servers' connections, this hub's own.
    own: Connections,
    /// stdio servers' connections, shared with the siblings.
    stdio: Arc<StdioChildren>,
    /// Which of `stdio.seats` this hub uses.
    seat: usize,
}

impl Hub {
    pub fn new(settings: HubSettings, changes: ChangeSender) -> Self {
        let seats = (0..settings.stdio_children.max(1))
            .map(|_| Connections::default())
            .collect();
        Self {
            settings,
            changes,
            own: Connections::default(),
            stdio: Arc::new(StdioChildren {
                seats,
                next: AtomicUsize::new(1),
            }),
            seat: 0,
        }
    }

    /// A hub with the same settings and HTTP connections of its own (one `/mcp` client
    /// session's upstream sessions, closed when it is dropped); its stdio servers are the
    /// processes this hub shares, the next one in turn. List changes its servers announce
    /// still reach discovery.
    pub fn sibling(&self) -> Hub {
        let seat = self.stdio.next.fetch_add(1, Ordering::Relaxed) % self.stdio.seats.len();
        Hub {
            settings: self.settings.clone(),
            changes: self.changes.clone(),
            own: Connections::default(),
            stdio: self.stdio.clone(),
            seat,
        }
    }

    /// Where this hub keeps its connections to `endpoint`.
    fn connections(&self, endpoint: &Endpoint) -> &Connections {
        match endpoint {
            Endpoint::Http { .. } => &self.own,
            Endpoint::Stdio { .. } => &self.stdio.seats[self.seat],
        }
    }

    pub fn settings(&self) -> &HubSettings {
        &self.settings
    }

    /// Every tool, following pagination.
    pub async fn list_tools(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Vec<Value>, McpError> {
        self.listed(
            slug,
            endpoint,
            |peer| async move { peer.list_all_tools().await },
        )
        .await
    }

    /// Every resource, following pagination.
    pub async fn list_resources(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Vec<Value>, McpError> {
        self.listed(slug, endpoint, |peer| async move {
            peer.list_all_resources().await
        })
        .await
    }

    /// Every resource template, following pagination.
    pub async fn list_resource_templates(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Vec<Value>, McpError> {
        self.listed(slug, endpoint, |peer| async move {
            peer.list_all_resource_templates().await
        })
        .await
    }

    /// Every prompt, following pagination.
    pub async fn list_prompts(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Vec<Value>, McpError> {
        self.listed(slug, endpoint, |peer| async move {
            peer.list_all_prompts().await
        })
        .await
    }

    /// A whole list (`list` follows pagination), as JSON, within the response byte limit.
    async fn listed<T, F, Fut>(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        list: F,
    ) -> Result<Vec<Value>, McpError>
    where
        T: serde::Serialize,
        F: Fn(rmcp::Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<Vec<T>, ServiceError>>,
    {
        let limit = self.settings.response_limit;
        self.idempotent(slug, endpoint, |peer| {
            let listing = list(peer);
            async move { to_json_list(&listing.await.map_err(service_error)?, limit) }
        })
        .await
    }

    /// One `prompts/get`, as JSON (a read: retried once on a fresh connection).
    pub async fn get_prompt(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> Result<Value, McpError> {
        let limit = self.settings.response_limit;
        let name = name.to_owned();
        self.idempotent(slug, endpoint, move |peer| {
            let (name, arguments) = (name.clone(), arguments.clone());
            async move {
                let mut params = rmcp::model::GetPromptRequestParams::new(name);
                if let Some(arguments) = arguments {
                    params = params.with_arguments(arguments);
                }
                let result = peer.get_prompt(params).await.map_err(service_error)?;
                to_json(&result, limit)
            }
        })
        .await
    }

    /// One `resources/read`, as JSON, within the resource byte limit.
    pub async fn read_resource(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        uri: &str,
    ) -> Result<Value, McpError> {
        let limit = self.settings.resource_limit;
        let uri = uri.to_owned();
        self.idempotent(slug, endpoint, move |peer| {
            let uri = uri.clone();
            async move {
                let result = peer
                    .read_resource(ReadResourceRequestParams::new(uri))
                    .await
                    .map_err(service_error)?;
                to_json(&result, limit + limit / 3 + 4096)
            }
        })
        .await
    }

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
    /// future cancels the call upstream (`notifications/cancelled`).
    pub async fn call_tool_reporting(
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
    async fn settled<T>(
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

    /// Drops the server's connection (after an edit, or when it is disabled): this hub's
    /// own, and every process of a stdio server.
    pub async fn forget(&self, slug: &str) {
        for connections in std::iter::once(&self.own).chain(self.stdio.seats.iter()) {
            let removed = write(&connections.live).remove(slug);
            if let Some(connection) = removed {
                close(connection);
            }
        }
    }

    /// Runs an idempotent request; after a transport failure or a timeout the connection is
    /// rebuilt and the request tried once more, which is how a restarted server is reached.
    async fn idempotent<F, Fut, T>(
        &self,
        slug: &str,
        endpoint: &Endpoint,
        request: F,
    ) -> Result<T, McpError>
    where
        F: Fn(rmcp::Peer<RoleClient>) -> Fut,
        Fut: Future<Output = Result<T, McpError>>,
    {
        let mut last = None;
        for _attempt in 0..2 {
            let connection = self.connection(slug, endpoint).await?;
            match self.timed(request(connection.service.peer().clone())).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(
                    err
                    @ (McpError::Server(_) | McpError::TooLarge { .. } | McpError::Malformed(_)),
                )) => {
                    return Err(err);
                }
                Ok(Err(err)) | Err(err) => {
                    self.forget_connection(slug, &connection).await;
                    if matches!(err, McpError::Timeout(_)) {
                        // A hung server would hang again; do not double the wait.
                        return Err(err);
                    }
                    last = Some(err);
                }
            }
        }
        Err(last.unwrap_or_else(|| McpError::Transport("no attempt made".into())))
    }

    async fn timed<T>(&self, future: impl Future<Output = T>) -> Result<T, McpError> {
        tokio::time::timeout(self.settings.request_timeout, future)
            .await
            .map_err(|_| McpError::Timeout(self.settings.request_timeout))
    }

    async fn forget_connection(&self, slug: &str, connection: &Arc<Connection>) {
        let removed = {
            let mut connections = write(&self.connections(&connection.endpoint).live);
            let current = connections
                .get(slug)
                .is_some_and(|current| Arc::ptr_eq(current, connection));
            if current {
                connections.remove(slug)
            } else {
                None
            }
        };
        if let Some(connection) = removed {
            close(connection);
        }
    }

    /// The live connection of a slug for this endpoint, if there is one.
    fn live(&self, slug: &str, endpoint: &Endpoint) -> Option<Arc<Connection>> {
        let connections = self
            .connections(endpoint)
            .live
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        connections
            .get(slug)
            .filter(|c| c.endpoint == *endpoint && !c.service.is_transport_closed())
            .cloned()
    }

    async fn connection(
        &self,
        slug: &str,
        endpoint: &Endpoint,
    ) -> Result<Arc<Connection>, McpError> {
        if let Some(live) = self.live(slug, endpoint) {
            return Ok(live);
        }
        let connections = self.connections(endpoint);
        let gate = lock(&connections.connecting)
            .entry(slug.to_owned())
            .or_default()
            .clone();
        let _connecting = gate.lock().await;
        // Another caller may have connected while this one waited at the gate.
        if let Some(live) = self.live(slug, endpoint) {
            return Ok(live);
        }
        let stale = write(&connections.live).remove(slug);
        if let Some(stale) = stale {
            close(stale);
        }
        let progress = ProgressRoutes::default();
        let handler = Handler {
            slug: slug.to_owned(),
            changes: self.changes.clone(),
        };
        let (service, direct) = self
            .timed(connect(
                handler,
                endpoint,
                self.settings.stdio_env.of(slug),
                progress.clone(),
            ))
            .await
            .map_err(|_| {
                McpError::Connect(format!(
                    "no answer to initialize within {:?}",
                    self.settings.request_timeout
                ))
            })??;
        let connection = Arc::new(Connection {
            endpoint: endpoint.clone(),
            service,
            progress,
            direct,
        });
        write(&connections.live).insert(slug.to_owned(), connection.clone());
        Ok(connection)
    }
}

pub(super) fn write<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

trait ConnectFailure: std::fmt::Display + std::fmt::Debug {}
impl<T: std::fmt::Display + std::fmt::Debug> ConnectFailure for T {}

/// A failure as a person can act on it. rmcp's transport errors carry a chain of wrapper
/// type names and rarely expose their cause through `source()`, so the text is read: a
/// known cause is named plainly, anything else has the type names stripped and is cut short.
pub(super) fn describe<E: std::fmt::Display + std::fmt::Debug + ?Sized>(err: &E) -> String {
    let text = err.to_string();
    // The cause often shows only in the Debug form.
    let full = format!("{text} {err:?}");
    let known = [
        (
            "Connection refused",
            "connection refused (is the server running?)",
        ),
        ("dns error", "the host name does not resolve"),
        ("certificate", "the TLS certificate was refused"),
        ("connection closed", "the server closed the connection"),
        ("Transport closed", "the server closed the connection"),
        (
            "could not parse JSON",
            "the server's answer is not valid JSON-RPC",
        ),
        (
            "UnexpectedContentType",
            "the server answered with an unexpected content type",
        ),
    ];
    if let Some((_, plain)) = known.iter().find(|(needle, _)| full.contains(needle)) {
        return (*plain).to_owned();
    }
    let mut cleaned = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '[' => depth += 1,
            ']' if depth > 0 => depth -= 1,
            _ if depth == 0 => cleaned.push(c),
            _ => {}
        }
    }
    let cleaned = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    if cleaned.chars().count() > 200 {
        format!("{}…", cleaned.chars().take(200).collect::<String>())
    } else {
        cleaned
    }
}

/// A connection's rmcp service, and for an HTTP server its direct calls. A stdio server
/// starts with `stdio_env` and the little of strad's environment `child_environment` lets
/// through.
async fn connect(
    handler: Handler,
    endpoint: &Endpoint,
    stdio_env: &[(String, String)],
    routes: ProgressRoutes,
) -> Result<(RunningService<RoleClient, Handler>, Option<Direct>), McpError> {
    let connect_error = |err: &dyn ConnectFailure| McpError::Connect(describe(err));
    match endpoint {
        Endpoint::Http { url } => {
            let negotiated = Negotiated::default();
            let (inner, client) = super::http::recording(url, negotiated.clone());
            let service = handler
                .serve(Routed { inner, routes })
                .await
                .map_err(|e| connect_error(&e))?;
            Ok((service, Some(Direct::new(client, url, negotiated))))
        }
        Endpoint::Stdio { command } => {
            let (program, args) = command
                .split_first()
                .ok_or_else(|| McpError::Connect("empty command".into()))?;
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args)
                .env_clear()
                .envs(child_environment(|name| std::env::var_os(name), stdio_env))
                .kill_on_drop(true);
            let (transport, _stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| connect_error(&e))?;
            let service = handler
                .serve(Routed {
                    inner: transport,
                    routes,
                })
                .await
                .map_err(|e| connect_error(&e))?;
            Ok((service, None))
        }
    }
}

fn close(connection: Arc<Connection>) {
    // Cancelling ends the session (and a stdio child) in the background.
    if let Ok(connection) = Arc::try_unwrap(connection) {
        tokio::spawn(async move {
            let _ = connection.service.cancel().await;
        });
    }
}

fn service_error(err: ServiceError) -> McpError {
    match err {
        ServiceError::McpError(data) => McpError::Server(data.message.to_string()),
        ServiceError::UnexpectedResponse => McpError::Malformed("unexpected response type".into()),
        ServiceError::Timeout { timeout } => McpError::Timeout(timeout),
        other => McpError::Transport(describe(&other)),
    }
}

/// A tool's result, and the same as the JSON text strad passes on: serialized once, both to
/// hold it to the size limit and to send it, and never parsed again on the way.
#[derive(Debug)]
pub struct ToolAnswer {
    pub result: CallToolResult,
    pub json: String,
}

/// `value` as JSON text of at most `limit` bytes.
fn to_text<T: serde::Serialize>(value: &T, limit: usize) -> Result<String, McpError> {
    let text = serde_json::to_string(value).map_err(|e| McpError::Malformed(e.to_string()))?;
    if text.len() > limit {
        return Err(McpError::TooLarge { limit });
    }
    Ok(text)
}

fn to_json<T: serde::Serialize>(value: &T, limit: usize) -> Result<Value, McpError> {
    serde_json::from_str(&to_text(value, limit)?).map_err(|e| McpError::Malformed(e.to_string()))
}

fn to_json_list<T: serde::Serialize>(items: &[T], limit: usize) -> Result<Vec<Value>, McpError> {
    match to_json(&items, limit)? {
        Value::Array(items) => Ok(items),
        _ => Err(McpError::Malformed("not a list".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[test]
    fn known_failures_are_named_plainly() {
        let refused = "Send message error Transport [rmcp::transport::worker::WorkerTransport<X>] error: Client error: error sending request (tcp connect error, Connection refused)";
        assert_eq!(
            describe(refused),
            "connection refused (is the server running?)"
        );
    }

    #[test]
    fn type_names_are_stripped_and_long_text_cut() {
        assert_eq!(
            describe("Transport [a::b<c>] failed   badly"),
            "Transport failed badly"
        );
        assert!(describe("x".repeat(500).as_str()).chars().count() <= 201);
    }
}
