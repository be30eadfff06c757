//! The bridge's message check (`bridge_message::parse`), fed what a frame could post:
//! arbitrary text, and well-formed JSON-RPC envelopes around arbitrary params. Whatever it
//! accepts stays inside the documented limits; whatever it refuses has a JSON-RPC code.
#![no_main]

use app::apps::bridge_message::{
    self, BYTE_LIMIT, Incoming, LOG_DATA_LIMIT, MAX_DEPTH, Notification, OpenTarget, Request,
};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Methods the host knows, so enveloped params reach each method's own checks.
const METHODS: [&str; 20] = [
    "ui/initialize",
    "ping",
    "ui/open-link",
    "tools/call",
    "resources/read",
    "ui/request-display-mode",
    "host/open",
    "host/resize",
    "ui/download-file",
    "x-strad/clipboard-write",
    "ui/message",
    "ui/notifications/initialized",
    "ui/notifications/size-changed",
    "notifications/message",
    "ui/log",
    "x-strad/search",
    "x-strad/hash",
    "sampling/createMessage",
    "eval",
    "",
];

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

fn check(text: &str) {
    let parsed = bridge_message::parse(text);
    let accepted = match parsed {
        Ok(incoming) => incoming,
        Err(rejection) => {
            assert!(
                rejection.code == -32600 || rejection.code == -32602,
                "code {}",
                rejection.code
            );
            return;
        }
    };
    assert!(
        text.len() <= BYTE_LIMIT,
        "an oversized message was accepted"
    );
    let value: Value = serde_json::from_str(text).expect("accepted text is JSON");
    assert!(
        depth(&value) <= MAX_DEPTH,
        "a too deep message was accepted"
    );
    assert_eq!(value.get("jsonrpc").and_then(Value::as_str), Some("2.0"));
    match accepted {
        Incoming::Request { request, .. } => {
            assert!(value.get("method").is_some_and(Value::is_string));
            match request {
                Request::OpenLink { url } => {
                    assert!(url.len() <= 8192);
                    if bridge_message::is_openable_link(&url) {
                        let lower = url.to_ascii_lowercase();
                        assert!(lower.starts_with("https://") || lower.starts_with("http://"));
                        assert!(!url.chars().any(|c| c.is_control() || c == '\\'), "{url:?}");
                    }
                }
                Request::ToolsCall { name, .. } => assert!(name.len() <= 256),
                Request::HostOpen(OpenTarget::Path(path)) => assert!(path.len() <= 2048),
                Request::HostOpen(OpenTarget::Id(id)) => assert!(id.len() <= 256),
                Request::HostResize { height } => assert!(height.is_finite()),
                Request::Initialize { display_modes } => assert!(display_modes.len() <= 8),
                Request::ClipboardWrite { text } => assert!(text.len() <= BYTE_LIMIT),
                _ => {}
            }
        }
        Incoming::Notification(notification) => {
            assert!(value.get("id").is_none(), "a notification has no id");
            match notification {
                Notification::Log { data, level, .. } => {
                    assert!(data.len() <= LOG_DATA_LIMIT + '…'.len_utf8());
                    assert!(level.len() <= 32);
                }
                Notification::SizeChanged { width, height } => {
                    assert!(width.is_none_or(f64::is_finite) && height.is_none_or(f64::is_finite));
                }
                Notification::Search { search } => assert!(search.len() <= 8192),
                Notification::Hash { hash, .. } => assert!(hash.len() <= 8192),
                _ => {}
            }
        }
        Incoming::Response { .. } => {
            assert!(value.get("method").is_none());
            assert!(value.get("result").is_some() != value.get("error").is_some());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        // The posted text as it is.
        if let Ok(text) = std::str::from_utf8(rest) {
            check(text);
        }
        return;
    }
    // A JSON-RPC envelope of a known method around arbitrary JSON params.
    let Ok(params) = serde_json::from_slice::<Value>(rest) else {
        return;
    };
    let method = METHODS[usize::from(mode >> 1) % METHODS.len()];
    let mut message = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
    if mode & 0x80 == 0 {
        message["id"] = Value::from(i64::from(mode));
    }
    check(&message.to_string());
});
