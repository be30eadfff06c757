//! POST /apps/<slug>/host-actions: what the person answered when a page asked the host to do
//! something outside its frame (open a link, save a file, write the clipboard), for the
//! audit log. The host does the action itself; this only records it.

use app::audit::ssr::writer::{self, Actor, AuditEvent};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tower_sessions::Session;

use super::{Refused, browser_session, entitled, parse_body, require_json};
use crate::state::ServerState;

/// The longest string of a detail kept in the audit row, in characters.
const DETAIL_CHARS: usize = 2048;
/// The most keys of an object, or items of a list, kept in the audit row.
const DETAIL_ITEMS: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum HostAction {
    OpenLink,
    Download,
    Clipboard,
}

impl HostAction {
    /// As the host names it (and serde reads it).
    fn as_str(self) -> &'static str {
        match self {
            HostAction::OpenLink => "open-link",
            HostAction::Download => "download",
            HostAction::Clipboard => "clipboard",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Answer {
    Approved,
    Declined,
    /// An open-link to an allow-listed host, opened without asking.
    Allowed,
}

impl Answer {
    /// As the host names it (and serde reads it).
    fn as_str(self) -> &'static str {
        match self {
            Answer::Approved => "approved",
            Answer::Declined => "declined",
            Answer::Allowed => "allowed",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    action: HostAction,
    decision: Answer,
    detail: Map<String, Value>,
}

const SHAPE: &str = "The body must be {\"action\": \"open-link\"|\"download\"|\"clipboard\", \
     \"decision\": \"approved\"|\"declined\"|\"allowed\", \"detail\": object}.";

/// Audits one host action as `host_action` {action, decision, detail}, the detail bounded.
pub async fn host_actions(
    State(state): State<ServerState>,
    session: Session,
    headers: HeaderMap,
    Path(slug): Path<String>,
    body: Bytes,
) -> Result<Response, Refused> {
    require_json(&headers)?;
    let (ctx, _server) = entitled(&state, &session, &slug).await?;
    browser_session(&ctx)?;
    let body: Body = parse_body(&body, SHAPE)?;
    // Only a link is ever opened without asking: the allow-list is of link hosts.
    if body.decision == Answer::Allowed && body.action != HostAction::OpenLink {
        return Err(Refused::Status(
            axum::http::StatusCode::BAD_REQUEST,
            "Only an open-link is allowed without asking.".into(),
        ));
    }
    let event = AuditEvent::HostAction {
        action: body.action.as_str(),
        decision: body.decision.as_str(),
        detail: bounded(&Value::Object(body.detail)),
    };
    let actor = Actor::person(ctx.user.id, &ctx.user.email);
    writer::append_alone(&state.app.pool, &actor, &event, Some(&slug)).await?;
    Ok(Json(json!({})).into_response())
}

/// `value` with every string cut to `DETAIL_CHARS` characters and every object and list to
/// its first `DETAIL_ITEMS` entries, so a page cannot make the audit log hold what it likes.
fn bounded(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(text.chars().take(DETAIL_CHARS).collect()),
        Value::Array(items) => items.iter().take(DETAIL_ITEMS).map(bounded).collect(),
        Value::Object(entries) => Value::Object(
            entries
                .iter()
                .take(DETAIL_ITEMS)
                .map(|(key, value)| (key.chars().take(DETAIL_CHARS).collect(), bounded(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_audited_names_are_those_the_host_sends() {
        for action in [
            HostAction::OpenLink,
            HostAction::Download,
            HostAction::Clipboard,
        ] {
            assert_eq!(json!(action), json!(action.as_str()));
        }
        for answer in [Answer::Approved, Answer::Declined, Answer::Allowed] {
            assert_eq!(json!(answer), json!(answer.as_str()));
        }
    }

    #[test]
    fn a_small_detail_is_kept_as_it_is() {
        let detail = json!({"url": "https://example.com/a?b=c", "files": [{"name": "a.txt",
            "size": 12, "type": "text/plain"}], "host_ascii": "example.com", "ok": true});
        assert_eq!(bounded(&detail), detail);
    }

    #[test]
    fn strings_are_cut_to_2048_characters_keys_included() {
        let long = "é".repeat(3000);
        let detail = bounded(&json!({"text": long, long.clone(): 1}));
        let detail = detail.as_object().unwrap();
        assert_eq!(
            detail["text"].as_str().unwrap().chars().count(),
            DETAIL_CHARS
        );
        assert!(detail.keys().all(|k| k.chars().count() <= DETAIL_CHARS));
    }

    #[test]
    fn objects_and_lists_keep_their_first_20_entries_at_every_depth() {
        let items: Vec<Value> = (0..50).map(|i| json!(i)).collect();
        let wide: Map<String, Value> = (0..50).map(|i| (format!("k{i:02}"), json!(i))).collect();
        let detail = bounded(&json!({"list": items, "nested": {"deeper": [wide.clone()]}}));
        assert_eq!(detail["list"].as_array().unwrap().len(), DETAIL_ITEMS);
        assert_eq!(detail["list"][19], 19);
        let deep = detail["nested"]["deeper"][0].as_object().unwrap();
        assert_eq!(deep.len(), DETAIL_ITEMS);
        assert_eq!(
            bounded(&Value::Object(wide)).as_object().unwrap().len(),
            DETAIL_ITEMS
        );
    }

    #[test]
    fn the_body_names_one_of_three_actions_and_three_answers() {
        let body = |text: &str| serde_json::from_str::<Body>(text);
        let ok = body(r#"{"action": "open-link", "decision": "allowed", "detail": {}}"#).unwrap();
        assert_eq!(
            (ok.action, ok.decision),
            (HostAction::OpenLink, Answer::Allowed)
        );
        assert!(body(r#"{"action": "download", "decision": "approved", "detail": {}}"#).is_ok());
        assert!(body(r#"{"action": "clipboard", "decision": "declined", "detail": {}}"#).is_ok());
        for bad in [
            r#"{"action": "print", "decision": "approved", "detail": {}}"#,
            r#"{"action": "download", "decision": "maybe", "detail": {}}"#,
            r#"{"action": "download", "decision": "approved", "detail": []}"#,
            r#"{"action": "download", "decision": "approved"}"#,
            r#"{"action": "download", "decision": "approved", "detail": {}, "x": 1}"#,
        ] {
            assert!(body(bad).is_err(), "{bad}");
        }
    }
}
