//! The methods the host knows, each with the shape of its params.

use serde_json::{Map, Value};

use super::super::host_actions::download_items;
use super::{BYTE_LIMIT, Notification, OpenTarget, Request};

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

pub(super) fn request(method: &str, params: &Map<String, Value>) -> Result<Request, &'static str> {
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

pub(super) fn notification(
    method: &str,
    params: &Map<String, Value>,
) -> Result<Notification, &'static str> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::bridge_message::{Id, Incoming, Rejection, parse};

    fn req(body: &str) -> Result<Incoming, Rejection> {
        parse(body)
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
}
