//! Validation of every message a framed page posts to the host (SPEC §6 "Bridge"): size,
//! depth, JSON-RPC 2.0 shape, a known method and the shape of its params. Runs in the
//! browser (the bridge) and is pure, so it is tested here in full. Fields strad does not
//! read are allowed (the SDK adds `_meta.progressToken` to `tools/call`).

use serde_json::{Map, Value};

pub use super::host_actions::DownloadItem;
use super::host_actions::download_items;

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

const INVALID_REQUEST: i64 = -32600;
const INVALID_PARAMS: i64 = -32602;

fn reject(id: Option<Id>, code: i64, message: &'static str) -> Rejection {
    Rejection { id, code, message }
}

/// Checks one message, given as the JSON text it was posted as.
pub fn parse(text: &str) -> Result<Incoming, Rejection> {
    if text.len() > BYTE_LIMIT {
        return Err(reject(None, INVALID_REQUEST, "message too large"));
    }
    // serde_json refuses nesting past 128 on its own; strad's limit is stricter.
    let value: Value =
        serde_json::from_str(text).map_err(|_| reject(None, INVALID_REQUEST, "not JSON"))?;
    if depth(&value) > MAX_DEPTH {
        return Err(reject(None, INVALID_REQUEST, "message nested too deeply"));
    }
    let Value::Object(message) = value else {
        return Err(reject(None, INVALID_REQUEST, "not a JSON-RPC message"));
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(reject(None, INVALID_REQUEST, "not JSON-RPC 2.0"));
    }
    let id = match message.get("id") {
        None => None,
        Some(Value::Number(n)) => Some(Id::Number(
            n.as_i64()
                .ok_or_else(|| reject(None, INVALID_REQUEST, "bad id"))?,
        )),
        Some(Value::String(s)) if s.len() <= 256 => Some(Id::Text(s.clone())),
        Some(_) => return Err(reject(None, INVALID_REQUEST, "bad id")),
    };
    let Some(method) = message.get("method") else {
        // A response: an id and exactly one of result or error.
        let id = id.ok_or_else(|| reject(None, INVALID_REQUEST, "neither request nor response"))?;
        return match (message.get("result"), message.get("error")) {
            (Some(_), None) => Ok(Incoming::Response { id, error: false }),
            (None, Some(_)) => Ok(Incoming::Response { id, error: true }),
            _ => Err(reject(None, INVALID_REQUEST, "bad response")),
        };
    };
    let method = method
        .as_str()
        .filter(|m| m.len() <= 128)
        .ok_or_else(|| reject(id.clone(), INVALID_REQUEST, "bad method"))?;
    let params = match message.get("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params.clone(),
        Some(_) => return Err(reject(id, INVALID_PARAMS, "params must be an object")),
    };
    match id {
        Some(id) => request(method, &params)
            .map(|request| Incoming::Request {
                id: id.clone(),
                request,
            })
            .map_err(|m| reject(Some(id), INVALID_PARAMS, m)),
        None => notification(method, &params)
            .map(Incoming::Notification)
            .map_err(|m| reject(None, INVALID_PARAMS, m)),
    }
}

fn text(params: &Map<String, Value>, key: &str, max: usize) -> Option<String> {
    params
        .get(key)?
        .as_str()
        .filter(|s| s.len() <= max)
        .map(str::to_owned)
}

fn number(params: &Map<String, Value>, key: &str) -> Option<f64> {
    params.get(key)?.as_f64().filter(|n| n.is_finite())
}

fn request(method: &str, params: &Map<String, Value>) -> Result<Request, &'static str> {
    Ok(match method {
        "ui/initialize" => Request::Initialize {
            display_modes: display_modes(params),
        },
        "ping" => Request::Ping,
        "ui/open-link" => Request::OpenLink {
            url: text(params, "url", 8192).ok_or("url must be a string")?,
        },
        "tools/call" => Request::ToolsCall {
            name: text(params, "name", 256).ok_or("name must be a string")?,
            arguments: match params.get("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(arguments)) => arguments.clone(),
                Some(_) => return Err("arguments must be an object"),
            },
            progress_token: params
                .get("_meta")
                .and_then(|meta| meta.get("progressToken"))
                .filter(|token| {
                    token.as_i64().is_some() || token.as_str().is_some_and(|t| t.len() <= 256)
                })
                .cloned(),
        },
        "resources/read" => Request::ResourcesRead {
            uri: text(params, "uri", 2048).ok_or("uri must be a string")?,
        },
        "ui/request-display-mode" => Request::RequestDisplayMode {
            mode: text(params, "mode", 32).ok_or("mode must be a string")?,
        },
        "host/open" => match (text(params, "path", 2048), text(params, "id", 256)) {
            (Some(path), None) => Request::HostOpen(OpenTarget::Path(path)),
            (None, Some(id)) => Request::HostOpen(OpenTarget::Id(id)),
            _ => return Err("give exactly one of path or id"),
        },
        "host/resize" => Request::HostResize {
            height: number(params, "height").ok_or("height must be a number")?,
        },
        "ui/download-file" => Request::DownloadFile(download_items(params)?),
        "x-strad/clipboard-write" => Request::ClipboardWrite {
            text: text(params, "text", BYTE_LIMIT).ok_or("text must be a string")?,
        },
        "ui/message" | "ui/update-model-context" | "sampling/createMessage" => {
            Request::NotSupported(method.to_owned())
        }
        other => Request::Unknown(other.to_owned()),
    })
}

fn notification(method: &str, params: &Map<String, Value>) -> Result<Notification, &'static str> {
    Ok(match method {
        "ui/notifications/initialized" => Notification::Initialized,
        "ui/notifications/size-changed" => Notification::SizeChanged {
            width: number(params, "width"),
            height: number(params, "height"),
        },
        "notifications/message" | "ui/log" => Notification::Log {
            level: text(params, "level", 32).unwrap_or_else(|| "info".into()),
            logger: text(params, "logger", 128),
            data: log_data(params.get("data")),
        },
        "x-strad/search" => Notification::Search {
            search: text(params, "search", 8192).ok_or("search must be a string")?,
        },
        "x-strad/hash" => Notification::Hash {
            hash: text(params, "hash", 8192).ok_or("hash must be a string")?,
            push: params.get("push").and_then(Value::as_bool).unwrap_or(false),
        },
        other => Notification::Other(other.to_owned()),
    })
}

/// The bytes of a logged message's `data` kept (as JSON text).
pub const LOG_DATA_LIMIT: usize = 2048;

fn log_data(data: Option<&Value>) -> String {
    let text = match data {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    if text.len() <= LOG_DATA_LIMIT {
        return text;
    }
    let mut end = LOG_DATA_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn display_modes(params: &Map<String, Value>) -> Vec<String> {
    params
        .get("appCapabilities")
        .and_then(|c| c.get("availableDisplayModes"))
        .and_then(Value::as_array)
        .map(|modes| {
            modes
                .iter()
                .filter_map(Value::as_str)
                .filter(|m| m.len() <= 32)
                .take(8)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// A `host/resize` height kept inside the container's bounds (NaN and infinities were
/// refused already).
pub fn clamp_height(height: f64, min: f64, max: f64) -> f64 {
    height.clamp(min, max)
}

/// Whether `ui/open-link` may open `url`: an absolute `http:` or `https:` URL only.
pub fn is_openable_link(url: &str) -> bool {
    let lower = url.trim_start().to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    rest.is_some_and(|rest| {
        !rest.is_empty()
            && !rest.starts_with('/')
            && !url.chars().any(|c| c.is_control() || c == '\\')
    }) && url.trim_start() == url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(body: &str) -> Result<Incoming, Rejection> {
        parse(body)
    }

    #[test]
    fn the_sdk_handshake_is_accepted_with_id_zero_and_extra_fields() {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"ui/initialize","params":{"appInfo":{"name":"x","version":"1"},"appCapabilities":{},"protocolVersion":"2026-01-26"}}"#;
        assert_eq!(
            req(init).unwrap(),
            Incoming::Request {
                id: Id::Number(0),
                request: Request::Initialize {
                    display_modes: vec![]
                }
            }
        );
        let initialized = r#"{"jsonrpc":"2.0","method":"ui/notifications/initialized"}"#;
        assert_eq!(
            req(initialized).unwrap(),
            Incoming::Notification(Notification::Initialized)
        );
        let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get-time","arguments":{},"_meta":{"progressToken":3}}}"#;
        assert!(
            matches!(req(call).unwrap(), Incoming::Request { request: Request::ToolsCall { ref name, .. }, .. } if name == "get-time")
        );
    }

    #[test]
    fn responses_to_the_hosts_requests_are_recognised() {
        assert_eq!(
            req(r#"{"jsonrpc":"2.0","id":"t1","result":{}}"#).unwrap(),
            Incoming::Response {
                id: Id::Text("t1".into()),
                error: false
            }
        );
        assert_eq!(
            req(r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"x"}}"#).unwrap(),
            Incoming::Response {
                id: Id::Number(7),
                error: true
            }
        );
        assert!(req(r#"{"jsonrpc":"2.0","id":7,"result":{},"error":{}}"#).is_err());
    }

    #[test]
    fn shapeless_messages_are_dropped_without_an_answer() {
        for body in [
            "",
            "null",
            "42",
            "\"x\"",
            "[]",
            "{}",
            "not json",
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0"}"#,
        ] {
            let rejection = req(body).unwrap_err();
            assert_eq!(rejection.id, None, "{body}");
        }
    }

    #[test]
    fn a_bad_request_with_an_id_is_answered() {
        for (body, code) in [
            (r#"{"jsonrpc":"2.0","id":1,"method":42}"#, INVALID_REQUEST),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"ui/open-link","params":{"url":7}}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"host/open","params":{"path":"/","id":"home"}}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"host/open","params":{}}"#,
                INVALID_PARAMS,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"host/resize","params":{"height":"tall"}}"#,
                INVALID_PARAMS,
            ),
        ] {
            let rejection = req(body).unwrap_err();
            assert_eq!(
                (rejection.id, rejection.code),
                (Some(Id::Number(1)), code),
                "{body}"
            );
        }
    }

    #[test]
    fn model_methods_are_not_supported_and_unknown_ones_not_found() {
        for method in [
            "ui/message",
            "ui/update-model-context",
            "sampling/createMessage",
        ] {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"role":"user","content":[]}}}}"#
            );
            assert_eq!(
                req(&body).unwrap(),
                Incoming::Request {
                    id: Id::Number(1),
                    request: Request::NotSupported(method.into())
                }
            );
        }
        assert_eq!(
            req(r#"{"jsonrpc":"2.0","id":1,"method":"eval"}"#).unwrap(),
            Incoming::Request {
                id: Id::Number(1),
                request: Request::Unknown("eval".into())
            }
        );
    }

    #[test]
    fn oversized_and_deeply_nested_messages_are_dropped() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"ui/log","params":{{"data":"{}"}}}}"#,
            "x".repeat(BYTE_LIMIT)
        );
        assert_eq!(req(&big).unwrap_err().message, "message too large");
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":{}1{}}}}}"#,
            "[".repeat(40),
            "]".repeat(40)
        );
        assert!(req(&deep).is_err());
        let very_deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(req(&very_deep).is_err(), "no stack overflow");
    }

    #[test]
    fn console_extensions_are_read() {
        assert_eq!(
            req(r##"{"jsonrpc":"2.0","method":"x-strad/hash","params":{"hash":"#item-3","push":true}}"##).unwrap(),
            Incoming::Notification(Notification::Hash { hash: "#item-3".into(), push: true })
        );
        assert_eq!(
            req(r#"{"jsonrpc":"2.0","method":"ui/notifications/size-changed","params":{"height":640}}"#).unwrap(),
            Incoming::Notification(Notification::SizeChanged { width: None, height: Some(640.0) })
        );
    }

    #[test]
    fn heights_are_clamped() {
        assert_eq!(clamp_height(10.0, 120.0, 2000.0), 120.0);
        assert_eq!(clamp_height(1e9, 120.0, 2000.0), 2000.0);
        assert_eq!(clamp_height(500.0, 120.0, 2000.0), 500.0);
    }

    #[test]
    fn only_http_and_https_links_open() {
        for url in [
            "https://example.com",
            "http://example.com/a?b#c",
            "HTTPS://EXAMPLE.COM",
        ] {
            assert!(is_openable_link(url), "{url}");
        }
        for url in [
            "javascript:alert(1)",
            "data:text/html,x",
            "file:///etc/passwd",
            "/relative",
            "//evil.example",
            "https:///x",
            "https://",
            " https://example.com",
            "https://example.com\\@evil",
            "https://ex\nample.com",
            "blob:https://x",
        ] {
            assert!(!is_openable_link(url), "{url:?}");
        }
    }
}
