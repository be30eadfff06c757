//! What discovery finds in a server's answers (SPEC §4), as pure functions over the JSON the
//! server sent: app tools (both metadata keys), visibility, `readOnlyHint`, app resources
//! (exact mimeType, text or base64 blob, `_meta.ui` from the read content first, else the
//! list entry), declared CSP domains and permissions. Bad metadata is a problem of its item,
//! never of the whole server.

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::canonical::{canonical_json, sha256_hex};

pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    Model,
    App,
}

/// A tool as discovery recorded it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub description: Option<String>,
    /// The `ui://` resource this tool declares, when it is an app tool.
    pub resource_uri: Option<String>,
    pub visibility: Vec<Visibility>,
    pub read_only_hint: bool,
    pub annotations: Value,
    pub problem: Option<String>,
}

/// A tool with its definition and fingerprint.
#[derive(Clone, Debug, PartialEq)]
pub struct DiscoveredTool {
    pub info: ToolInfo,
    /// Canonical JSON of the whole definition: what the fingerprint covers.
    pub canonical: String,
    pub digest: String,
}

/// An app resource that passed every check.
#[derive(Clone, Debug, PartialEq)]
pub struct AppResource {
    pub uri: String,
    pub bytes: Vec<u8>,
    /// `_meta.ui` as the server declared it (content item first, else list entry).
    pub meta_ui: Value,
    /// SHA-256 of the bytes alone.
    pub content_digest: String,
    /// SHA-256 over the bytes and the canonical `_meta.ui`: the fingerprint.
    pub digest: String,
    pub resource_domains: Vec<String>,
    pub permissions: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemProblem {
    pub item: String,
    pub problem: String,
}

/// Reads one tool definition.
pub fn tool_info(tool: &Value) -> Option<ToolInfo> {
    let name = tool.get("name")?.as_str()?.to_owned();
    let meta = tool.get("_meta");
    let ui = meta.and_then(|m| m.get("ui"));
    let mut problem = None;

    // `_meta.ui.resourceUri` wins; the deprecated flat `_meta["ui/resourceUri"]` is read too.
    let declared = ui
        .and_then(|ui| ui.get("resourceUri"))
        .or_else(|| meta.and_then(|m| m.get("ui/resourceUri")));
    let resource_uri = match declared {
        None | Some(Value::Null) => None,
        Some(Value::String(uri)) if uri.starts_with("ui://") && uri.len() > 5 => Some(uri.clone()),
        Some(other) => {
            problem = Some(format!("resourceUri {} is not a ui:// URI", short(other)));
            None
        }
    };

    let visibility = match ui.and_then(|ui| ui.get("visibility")) {
        None | Some(Value::Null) => vec![Visibility::Model, Visibility::App],
        Some(Value::Array(items)) => {
            let mut seen = Vec::new();
            for item in items {
                match item.as_str() {
                    Some("model") if !seen.contains(&Visibility::Model) => {
                        seen.push(Visibility::Model)
                    }
                    Some("app") if !seen.contains(&Visibility::App) => seen.push(Visibility::App),
                    Some("model" | "app") => {}
                    _ => problem = Some(format!("unknown visibility {}", short(item))),
                }
            }
            seen
        }
        Some(other) => {
            // A malformed visibility is read as the narrowest: reachable from no surface.
            problem = Some(format!("visibility {} is not a list", short(other)));
            Vec::new()
        }
    };

    let annotations = tool.get("annotations").cloned().unwrap_or(Value::Null);
    let read_only_hint = annotations.get("readOnlyHint").and_then(Value::as_bool) == Some(true);
    Some(ToolInfo {
        name,
        description: tool
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        resource_uri,
        visibility,
        read_only_hint,
        annotations,
        problem,
    })
}

pub fn discover_tool(tool: &Value) -> Option<DiscoveredTool> {
    let info = tool_info(tool)?;
    let canonical = canonical_json(tool);
    let digest = sha256_hex(canonical.as_bytes());
    Some(DiscoveredTool {
        info,
        canonical,
        digest,
    })
}

/// The `ui://` URIs worth reading: every listed `ui://` resource and every URI an app tool
/// names, without duplicates, in a stable order.
pub fn app_resource_candidates(tools: &[DiscoveredTool], resources: &[Value]) -> Vec<String> {
    let mut uris: Vec<String> = resources
        .iter()
        .filter_map(|r| r.get("uri")?.as_str())
        .filter(|uri| uri.starts_with("ui://"))
        .map(str::to_owned)
        .chain(tools.iter().filter_map(|t| t.info.resource_uri.clone()))
        .collect();
    uris.sort();
    uris.dedup();
    uris
}

/// Checks one `resources/read` answer for `uri` and turns it into an app resource.
pub fn app_resource(
    uri: &str,
    list_entry: Option<&Value>,
    read_result: &Value,
    byte_limit: usize,
) -> Result<AppResource, String> {
    let contents = read_result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the answer has no contents")?;
    let item = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or_else(|| contents.first())
        .ok_or("the answer's contents are empty")?;
    let mime = item
        .get("mimeType")
        .or_else(|| list_entry.and_then(|e| e.get("mimeType")))
        .and_then(Value::as_str)
        .unwrap_or("");
    if mime != APP_MIME_TYPE {
        return Err(format!(
            "mimeType is {} rather than {APP_MIME_TYPE}",
            short(&Value::String(mime.into()))
        ));
    }
    let bytes = match (item.get("text"), item.get("blob")) {
        (Some(Value::String(text)), _) => text.as_bytes().to_vec(),
        (_, Some(Value::String(blob))) => {
            // Checked before decoding: base64 grows by a third.
            if blob.len() / 4 * 3 > byte_limit + 3 {
                return Err(format!("larger than the {byte_limit}-byte limit"));
            }
            base64::engine::general_purpose::STANDARD
                .decode(blob.trim())
                .map_err(|_| "blob is not valid base64".to_string())?
        }
        _ => return Err("content has neither text nor blob".into()),
    };
    if bytes.len() > byte_limit {
        return Err(format!(
            "{} bytes, over the {byte_limit}-byte limit",
            bytes.len()
        ));
    }
    if std::str::from_utf8(&bytes).is_err() {
        return Err("content is not UTF-8 HTML".into());
    }
    let meta_ui = item
        .get("_meta")
        .and_then(|m| m.get("ui"))
        .or_else(|| {
            list_entry
                .and_then(|e| e.get("_meta"))
                .and_then(|m| m.get("ui"))
        })
        .cloned()
        .unwrap_or(Value::Null);
    let resource_domains = string_list(meta_ui.get("csp").and_then(|c| c.get("resourceDomains")));
    let mut permissions: Vec<String> = meta_ui
        .get("permissions")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    permissions.sort();
    let content_digest = sha256_hex(&bytes);
    let mut fingerprinted = bytes.clone();
    fingerprinted.push(0);
    fingerprinted.extend_from_slice(canonical_json(&meta_ui).as_bytes());
    Ok(AppResource {
        uri: uri.to_owned(),
        digest: sha256_hex(&fingerprinted),
        content_digest,
        bytes,
        meta_ui,
        resource_domains,
        permissions,
    })
}

/// The strings of a JSON array (anything else in it, or no array, is skipped).
pub fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A value for a message, cut short.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 80 {
        format!("{}…", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIMIT: usize = 8 * 1024 * 1024;

    #[test]
    fn an_app_tool_is_found_by_either_metadata_key() {
        let nested = json!({"name": "a", "_meta": {"ui": {"resourceUri": "ui://x/a.html"}}});
        let flat = json!({"name": "b", "_meta": {"ui/resourceUri": "ui://x/b.html"}});
        let both = json!({"name": "c", "_meta": {"ui": {"resourceUri": "ui://x/new.html"}, "ui/resourceUri": "ui://x/old.html"}});
        assert_eq!(
            tool_info(&nested).unwrap().resource_uri.as_deref(),
            Some("ui://x/a.html")
        );
        assert_eq!(
            tool_info(&flat).unwrap().resource_uri.as_deref(),
            Some("ui://x/b.html")
        );
        assert_eq!(
            tool_info(&both).unwrap().resource_uri.as_deref(),
            Some("ui://x/new.html")
        );
    }

    #[test]
    fn a_resource_uri_that_is_not_ui_is_a_problem_of_that_tool() {
        for bad in [
            json!("https://example.com/a.html"),
            json!("ui://"),
            json!(42),
            json!("UI://x"),
        ] {
            let info =
                tool_info(&json!({"name": "t", "_meta": {"ui": {"resourceUri": bad}}})).unwrap();
            assert_eq!(info.resource_uri, None);
            assert!(info.problem.unwrap().contains("not a ui:// URI"));
        }
    }

    #[test]
    fn visibility_defaults_to_model_and_app() {
        let info = tool_info(&json!({"name": "t"})).unwrap();
        assert_eq!(info.visibility, [Visibility::Model, Visibility::App]);
        assert_eq!(info.problem, None);
    }

    #[test]
    fn visibility_is_read_and_unknown_entries_are_reported() {
        let info =
            tool_info(&json!({"name": "t", "_meta": {"ui": {"visibility": ["app"]}}})).unwrap();
        assert_eq!(info.visibility, [Visibility::App]);
        let info = tool_info(
            &json!({"name": "t", "_meta": {"ui": {"visibility": ["app", "root", "app"]}}}),
        )
        .unwrap();
        assert_eq!(info.visibility, [Visibility::App]);
        assert!(info.problem.unwrap().contains("unknown visibility"));
        let info =
            tool_info(&json!({"name": "t", "_meta": {"ui": {"visibility": "model"}}})).unwrap();
        assert!(
            info.visibility.is_empty(),
            "a malformed visibility reaches no surface"
        );
        assert!(info.problem.is_some());
    }

    #[test]
    fn read_only_needs_an_explicit_true() {
        let yes = tool_info(&json!({"name": "t", "annotations": {"readOnlyHint": true}})).unwrap();
        let no = tool_info(&json!({"name": "t", "annotations": {"readOnlyHint": "true"}})).unwrap();
        let absent = tool_info(&json!({"name": "t"})).unwrap();
        assert!(yes.read_only_hint);
        assert!(!no.read_only_hint);
        assert!(!absent.read_only_hint);
    }

    #[test]
    fn a_tool_fingerprint_ignores_key_order_and_sees_any_change() {
        let a = discover_tool(
            &json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}}),
        )
        .unwrap();
        let b = discover_tool(
            &json!({"inputSchema": {"type": "object"}, "description": "d", "name": "t"}),
        )
        .unwrap();
        let c = discover_tool(
            &json!({"name": "t", "description": "e", "inputSchema": {"type": "object"}}),
        )
        .unwrap();
        assert_eq!(a.digest, b.digest);
        assert_ne!(a.digest, c.digest);
        assert_eq!(a.digest.len(), 64);
    }

    #[test]
    fn candidates_are_listed_ui_resources_and_tool_references() {
        let tools = vec![
            discover_tool(
                &json!({"name": "t", "_meta": {"ui": {"resourceUri": "ui://x/hidden.html"}}}),
            )
            .unwrap(),
            discover_tool(&json!({"name": "u", "_meta": {"ui": {"resourceUri": "ui://x/a.html"}}}))
                .unwrap(),
        ];
        let resources = vec![
            json!({"uri": "ui://x/a.html"}),
            json!({"uri": "file:///readme"}),
        ];
        assert_eq!(
            app_resource_candidates(&tools, &resources),
            ["ui://x/a.html", "ui://x/hidden.html"]
        );
    }

    fn read(item: Value) -> Value {
        json!({"contents": [item]})
    }

    #[test]
    fn an_app_resource_is_read_from_text() {
        let result = read(
            json!({"uri": "ui://x/a.html", "mimeType": APP_MIME_TYPE, "text": "<p>hi</p>",
            "_meta": {"ui": {"csp": {"resourceDomains": ["https://cdn.example.com"]}, "permissions": {"camera": {}, "clipboardWrite": {}}}}}),
        );
        let app = app_resource("ui://x/a.html", None, &result, LIMIT).unwrap();
        assert_eq!(app.bytes, b"<p>hi</p>");
        assert_eq!(app.content_digest, sha256_hex(b"<p>hi</p>"));
        assert_eq!(app.resource_domains, ["https://cdn.example.com"]);
        assert_eq!(app.permissions, ["camera", "clipboardWrite"]);
        assert_ne!(
            app.digest, app.content_digest,
            "the fingerprint covers _meta.ui too"
        );
    }

    #[test]
    fn an_app_resource_is_read_from_a_base64_blob() {
        let result = read(
            json!({"uri": "ui://x/a.html", "mimeType": APP_MIME_TYPE, "blob": "PHA+aGk8L3A+"}),
        );
        assert_eq!(
            app_resource("ui://x/a.html", None, &result, LIMIT)
                .unwrap()
                .bytes,
            b"<p>hi</p>"
        );
        let bad = read(json!({"uri": "ui://x/a.html", "mimeType": APP_MIME_TYPE, "blob": "***"}));
        assert!(
            app_resource("ui://x/a.html", None, &bad, LIMIT)
                .unwrap_err()
                .contains("base64")
        );
    }

    #[test]
    fn meta_ui_comes_from_the_content_item_first_then_the_list_entry() {
        let entry = json!({"uri": "ui://x/a.html", "_meta": {"ui": {"prefersBorder": true}}});
        let with_item_meta = read(
            json!({"uri": "ui://x/a.html", "mimeType": APP_MIME_TYPE, "text": "x", "_meta": {"ui": {"prefersBorder": false}}}),
        );
        let without = read(json!({"uri": "ui://x/a.html", "mimeType": APP_MIME_TYPE, "text": "x"}));
        assert_eq!(
            app_resource("ui://x/a.html", Some(&entry), &with_item_meta, LIMIT)
                .unwrap()
                .meta_ui,
            json!({"prefersBorder": false})
        );
        assert_eq!(
            app_resource("ui://x/a.html", Some(&entry), &without, LIMIT)
                .unwrap()
                .meta_ui,
            json!({"prefersBorder": true})
        );
    }

    #[test]
    fn the_mime_type_must_be_exact() {
        for mime in [
            "text/html",
            "text/html; profile=mcp-app",
            "TEXT/HTML;PROFILE=MCP-APP",
            "",
        ] {
            let result = read(json!({"uri": "ui://x/a.html", "mimeType": mime, "text": "x"}));
            assert!(
                app_resource("ui://x/a.html", None, &result, LIMIT)
                    .unwrap_err()
                    .contains("mimeType"),
                "{mime}"
            );
        }
        let entry = json!({"uri": "ui://x/a.html", "mimeType": APP_MIME_TYPE});
        let unnamed = read(json!({"uri": "ui://x/a.html", "text": "x"}));
        assert!(
            app_resource("ui://x/a.html", Some(&entry), &unnamed, LIMIT).is_ok(),
            "the list entry's mimeType counts"
        );
    }

    #[test]
    fn an_oversized_resource_is_refused() {
        let result = read(
            json!({"uri": "ui://x/a.html", "mimeType": APP_MIME_TYPE, "text": "x".repeat(101)}),
        );
        assert!(
            app_resource("ui://x/a.html", None, &result, 100)
                .unwrap_err()
                .contains("limit")
        );
        let blob = base64::engine::general_purpose::STANDARD.encode(vec![b'x'; 400]);
        let result = read(json!({"uri": "ui://x/a.html", "mimeType": APP_MIME_TYPE, "blob": blob}));
        assert!(
            app_resource("ui://x/a.html", None, &result, 100)
                .unwrap_err()
                .contains("limit")
        );
    }

    #[test]
    fn empty_or_shapeless_answers_are_problems() {
        assert!(app_resource("ui://x", None, &json!({}), LIMIT).is_err());
        assert!(app_resource("ui://x", None, &json!({"contents": []}), LIMIT).is_err());
        let no_body = read(json!({"uri": "ui://x", "mimeType": APP_MIME_TYPE}));
        assert!(app_resource("ui://x", None, &no_body, LIMIT).is_err());
    }
}
