//! POST /apps/<slug>/log: a page's `notifications/message`, written to strad's own log under
//! the target `strad::app_log` so an operator can follow an app with its person and server.
//! A page is not trusted with the log: each person has a small rate, the rest dropped
//! without a word, and what a page writes is cut and escaped.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;
use tower_sessions::Session;

use super::{Refused, browser_session, entitled, parse_body, require_json};
use crate::state::ServerState;

/// Lines a person's pages may log a second; a page over it is not told (it would only retry).
pub const LINES_PER_SECOND: u32 = 10;
/// The most of a line's data kept, as JSON text.
const DATA_BYTES: usize = 2048;
/// The most of a logger's name kept, in characters.
const LOGGER_CHARS: usize = 128;

/// MCP's logging levels (RFC 5424's severities).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

#[derive(Deserialize)]
struct Body {
    level: Level,
    #[serde(default)]
    logger: Option<String>,
    data: Value,
}

const SHAPE: &str = "The body must be {\"level\": string, \"logger\"?: string, \"data\": any}.";

/// Logs one line of a page's log, when the person is within their rate; 204 either way.
pub async fn app_log(
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
    if state.log_rates.allow(ctx.user.id) {
        let logger: Option<String> = body.logger.map(|l| l.chars().take(LOGGER_CHARS).collect());
        let data = body.data.to_string();
        let data = cut(&data, DATA_BYTES);
        // Every level is written at INFO (DEBUG for debug): a page's own "emergency" must not
        // page whoever watches strad's errors. The level is a field, its values escaped.
        let level = format!("{:?}", body.level).to_lowercase();
        if body.level == Level::Debug {
            tracing::debug!(target: "strad::app_log", slug = %slug, person.email = %ctx.user.email,
                level = %level, logger = ?logger, data = ?data, "app log");
        } else {
            tracing::info!(target: "strad::app_log", slug = %slug, person.email = %ctx.user.email,
                level = %level, logger = ?logger, data = ?data, "app log");
        }
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// The longest start of `text` of at most `limit` bytes that ends on a character.
fn cut(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_is_cut_on_a_character_at_2_kib() {
        assert_eq!(cut("short", DATA_BYTES), "short");
        let long = "é".repeat(2000);
        let kept = cut(&long, DATA_BYTES);
        assert_eq!(kept.len(), DATA_BYTES);
        let odd = format!("a{long}");
        assert_eq!(cut(&odd, DATA_BYTES).len(), DATA_BYTES - 1);
    }

    #[test]
    fn the_body_needs_an_mcp_level_and_data() {
        let body = |text: &str| serde_json::from_str::<Body>(text);
        assert!(body(r#"{"level": "warning", "data": {"a": 1}}"#).is_ok());
        assert!(body(r#"{"level": "info", "logger": "app", "data": "x"}"#).is_ok());
        assert!(body(r#"{"level": "loud", "data": 1}"#).is_err());
        assert!(body(r#"{"level": "info"}"#).is_err());
    }
}
