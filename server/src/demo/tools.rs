//! The demo's three tools: `show_clock` (read-only, declares the page), `list_notes`
//! (read-only) and `add_note` (writes, so the console asks before running it).

use rmcp::ErrorData as McpError;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::PAGE_URI;
use super::notes::{LONGEST, Notes};

/// The tools as `tools/list` sends them.
pub fn definitions() -> Vec<Value> {
    vec![
        json!({
            "name": "show_clock",
            "title": "Show the clock",
            "description": "Opens a clock in your own time zone, with the server's time and the shared notes.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "label": {"type": "string", "title": "Label", "maxLength": 60,
                              "description": "Shown above the clock."}
                },
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": true},
            "_meta": {"ui": {"resourceUri": PAGE_URI}}
        }),
        json!({
            "name": "list_notes",
            "title": "List the notes",
            "description": "The shared notes, newest first.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": "add_note",
            "title": "Add a note",
            "description": "Adds a note to the shared list.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "title": "Note", "minLength": 1,
                             "maxLength": LONGEST}
                },
                "required": ["text"],
                "additionalProperties": false
            },
            "annotations": {"readOnlyHint": false, "destructiveHint": false}
        }),
    ]
}

/// Runs a tool; a refusal the caller can fix is a result with `isError`, as MCP asks.
pub fn call(notes: &Notes, name: &str, arguments: &Value) -> Result<Value, McpError> {
    let now = OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_default();
    match name {
        "show_clock" => {
            let label = arguments
                .get("label")
                .and_then(Value::as_str)
                .unwrap_or("")
                .chars()
                .take(60)
                .collect::<String>();
            Ok(result(
                format!("The server's time is {now}."),
                json!({"now": now, "label": label, "notes": notes.list()}),
            ))
        }
        "list_notes" => {
            let list = notes.list();
            Ok(result(
                format!("{} notes.", list.len()),
                json!({"now": now, "notes": list}),
            ))
        }
        "add_note" => {
            let text = arguments.get("text").and_then(Value::as_str).unwrap_or("");
            match notes.add(text) {
                Ok(list) => Ok(result(
                    "The note is added.".into(),
                    json!({"now": now, "notes": list}),
                )),
                Err(why) => {
                    Ok(json!({"content": [{"type": "text", "text": why}], "isError": true}))
                }
            }
        }
        other => Err(McpError::invalid_params(format!("no tool {other}"), None)),
    }
}

fn result(text: String, structured: Value) -> Value {
    json!({"content": [{"type": "text", "text": text}], "structuredContent": structured})
}
