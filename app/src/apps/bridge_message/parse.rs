//! A message's size, depth and JSON-RPC 2.0 shape, checked before its method is read.

use serde_json::{Map, Value};

use super::known_methods::{notification, request};
use super::{BYTE_LIMIT, Id, Incoming, MAX_DEPTH, Rejection};

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
        crate::json::parse(text).map_err(|_| reject(None, INVALID_REQUEST, "not JSON"))?;
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

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apps::bridge_message::{Notification, Request};

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
}
