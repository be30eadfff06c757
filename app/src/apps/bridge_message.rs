//! Validation of every message a framed page posts to the host (SPEC §6 "Bridge"): size,
//! depth, JSON-RPC 2.0 shape, a known method and the shape of its params. Runs in the
//! browser (the bridge) and is pure, so it is tested here in full. Fields strad does not
//! read are allowed (the SDK adds `_meta.progressToken` to `tools/call`).
use serde_json::{Map, Value};

pub use super::host_actions::DownloadItem;

mod host_limits;
mod known_methods;
mod parse;

pub use host_limits::{clamp_height, is_openable_link};
pub use known_methods::LOG_DATA_LIMIT;
pub use parse::parse;

/// Largest message accepted, as JSON text (SPEC §6 default).
pub const BYTE_LIMIT: usize = 256 * 1024;
/// Deepest nesting accepted; real MCP Apps traffic stays well below it.
pub const MAX_DEPTH: usize = 32;

/// A JSON-RPC id. `0` is a legitimate id (the SDK starts there).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    Number(i64),
    Text(String),
}

impl Id {
    pub fn to_value(&self) -> Value {
        match self {
            Id::Number(n) => Value::from(*n),
            Id::Text(s) => Value::from(s.clone()),
        }
    }
}

/// What `host/open` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenTarget {
    Path(String),
    Id(String),
}

/// A request the host knows (view → host).
#[derive(Clone, Debug, PartialEq)]
pub enum Request {
    /// `ui/initialize`, with the display modes the app says it supports (empty: unsaid).
    Initialize {
        display_modes: Vec<String>,
    },
    Ping,
    OpenLink {
        url: String,
    },
    ToolsCall {
        name: String,
        arguments: Map<String, Value>,
        /// `_meta.progressToken`: the host keeps the request alive with progress while a
        /// person decides on it (the SDK resets its timeout on each).
        progress_token: Option<Value>,
    },
    ResourcesRead {
        uri: String,
    },
    RequestDisplayMode {
        mode: String,
    },
    HostOpen(OpenTarget),
    HostResize {
        height: f64,
    },
    /// `ui/download-file`: files the person is asked to save.
    DownloadFile(Vec<DownloadItem>),
    /// `x-strad/clipboard-write`: text the person is asked to copy.
    ClipboardWrite {
        text: String,
    },
    /// `ui/message`, `ui/update-model-context`, `sampling/createMessage`: strad has no model.
    NotSupported(String),
    /// Answered "method not found".
    Unknown(String),
}

/// A notification the host acts on; others are ignored.
#[derive(Clone, Debug, PartialEq)]
pub enum Notification {
    Initialized,
    SizeChanged {
        width: Option<f64>,
        height: Option<f64>,
    },
    Log {
        level: String,
        logger: Option<String>,
        /// The message's `data`, as JSON text, cut to `LOG_DATA_LIMIT` bytes.
        data: String,
    },
    Search {
        search: String,
    },
    Hash {
        hash: String,
        push: bool,
    },
    Other(String),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: Id,
        request: Request,
    },
    Notification(Notification),
    /// An answer to a request the host sent (e.g. `ui/resource-teardown`).
    Response {
        id: Id,
        error: bool,
    },
}

/// Why a message was refused. `id` is set when there is one to answer; without it the
/// message is dropped silently.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    pub id: Option<Id>,
    pub code: i64,
    pub message: &'static str,
}
