//! Checks on what admins type into the server forms.

use serde_json::{Value, json};

use super::client::Endpoint;
use super::registry::{ServerRow, ServerSpec};
use crate::error::AppError;
use crate::servers::{Capability, is_valid_slug};

fn invalid(field: &str) -> AppError {
    AppError::Invalid {
        field: field.into(),
    }
}

pub fn slug(value: &str) -> Result<String, AppError> {
    let value = value.trim();
    if is_valid_slug(value) {
        Ok(value.to_owned())
    } else {
        Err(invalid("slug"))
    }
}

pub fn display_name(value: &str) -> Result<String, AppError> {
    let value = value.trim();
    if (1..=100).contains(&value.chars().count()) && !value.chars().any(char::is_control) {
        Ok(value.to_owned())
    } else {
        Err(invalid("display name"))
    }
}

/// An `http(s)://` URL without credentials or fragment.
pub fn http_url(value: &str) -> Result<String, AppError> {
    let url = url::Url::parse(value.trim()).map_err(|_| invalid("url"))?;
    let ok = matches!(url.scheme(), "http" | "https")
        && url.host_str().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none();
    if ok {
        Ok(url.to_string())
    } else {
        Err(invalid("url"))
    }
}

/// Checkboxes in the order tools, prompts, resources, apps: present means approved.
pub fn capabilities(boxes: [Option<String>; 4]) -> Vec<Capability> {
    Capability::ALL
        .into_iter()
        .zip(boxes)
        .filter(|(_, checked)| checked.is_some())
        .map(|(c, _)| c)
        .collect()
}

/// A UI-registered (Streamable HTTP) server from the form's fields; the first bad field is
/// the error.
pub fn http_server(
    slug: String,
    display_name: &str,
    url: &str,
    boxes: [Option<String>; 4],
    enabled: bool,
) -> Result<ServerSpec, AppError> {
    Ok(ServerSpec {
        slug,
        display_name: self::display_name(display_name)?,
        endpoint: Endpoint::Http {
            url: http_url(url)?,
        },
        from_config: false,
        capabilities: capabilities(boxes),
        enabled,
    })
}

pub fn is_constraint(err: &sqlx::Error, name: &str) -> bool {
    err.as_database_error().and_then(|e| e.constraint()) == Some(name)
}

pub fn audit_payload(row: &ServerRow) -> Value {
    json!({
        "display_name": row.display_name,
        "transport": row.transport,
        "url": row.url,
        "command": row.command,
        "capabilities": row.capabilities,
        "enabled": row.enabled,
    })
}

/// A filter bound: `YYYY-MM-DD` (midnight UTC) or RFC 3339; empty means none.
pub fn time_filter(
    value: Option<&str>,
    field: &str,
) -> Result<Option<time::OffsetDateTime>, AppError> {
    use time::format_description::well_known::Rfc3339;
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if let Ok(at) = time::OffsetDateTime::parse(value, &Rfc3339) {
        return Ok(Some(at));
    }
    let date = time::Date::parse(
        value,
        time::macros::format_description!("[year]-[month]-[day]"),
    )
    .map_err(|_| invalid(field))?;
    Ok(Some(date.midnight().assume_utc()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_http_without_credentials() {
        assert_eq!(
            http_url(" http://127.0.0.1:4000/mcp ").unwrap(),
            "http://127.0.0.1:4000/mcp"
        );
        for bad in [
            "ftp://x/mcp",
            "javascript:alert(1)",
            "http://u:p@x/mcp",
            "http://",
            "x",
            "http://x/mcp#f",
            "file:///etc/passwd",
        ] {
            assert!(http_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn checked_boxes_become_capabilities() {
        assert_eq!(
            capabilities([Some("on".into()), None, None, Some("on".into())]),
            [Capability::Tools, Capability::Apps]
        );
    }

    #[test]
    fn display_names_are_short_and_printable() {
        assert!(display_name("Clock").is_ok());
        assert!(display_name("  ").is_err());
        assert!(display_name("a\u{0007}b").is_err());
        assert!(display_name(&"x".repeat(101)).is_err());
    }

    #[test]
    fn time_filters_take_dates_or_timestamps() {
        assert_eq!(
            time_filter(Some("2026-11-30"), "since")
                .unwrap()
                .unwrap()
                .unix_timestamp(),
            1_795_996_800
        );
        assert!(
            time_filter(Some("2026-11-30T10:00:00Z"), "since")
                .unwrap()
                .is_some()
        );
        assert_eq!(time_filter(Some(""), "since").unwrap(), None);
        assert!(time_filter(Some("yesterday"), "since").is_err());
    }
}
