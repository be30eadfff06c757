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
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{CallToolResult, ProgressNotificationParam, ProgressToken};
use rmcp::service::RunningService;
use serde_json::Value;
use tokio::sync::mpsc;

use super::child_environment::DeclaredEnv;
use super::direct::Direct;

mod connect;
mod handler;
mod hub;
mod plain_failures;
mod progress_routing;
mod reads;
mod tool_calls;

use handler::Handler;
pub use handler::client_info;
pub(super) use plain_failures::describe;

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
    /// The HTTP client of this hub and its siblings (`http::client`).
    http: rmcp_reqwest::Client,
}

pub(super) fn write<T>(lock: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    lock.write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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
