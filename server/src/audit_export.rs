//! The auditor's export (SPEC §10): `GET /audit/export.csv` and `GET /audit/export.json`,
//! filtered by time, person, slug and kind. The body is streamed from the database in
//! batches, so exporting a long log never holds it in memory.

use std::borrow::Cow;

use app::auth::Role;
use app::auth::ssr::context::RequestContext;
use app::error::AppError;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::{StreamExt, TryStreamExt};
use serde::Serialize;
use serde_json::Value;
use sqlx::PgPool;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::{Date, OffsetDateTime, UtcOffset};
use tokio::sync::mpsc;
use tower_sessions::Session;
use uuid::Uuid;

use crate::state::ServerState;

pub fn routes() -> Router<ServerState> {
    Router::new()
        .route("/audit/export.csv", get(export_csv))
        .route("/audit/export.json", get(export_json))
}

async fn export_csv(
    State(state): State<ServerState>,
    session: Session,
    RawQuery(query): RawQuery,
) -> Response {
    export(state, session, query, Format::Csv).await
}

async fn export_json(
    State(state): State<ServerState>,
    session: Session,
    RawQuery(query): RawQuery,
) -> Response {
    export(state, session, query, Format::Json).await
}

/// Rows go to the response in batches of about this many bytes.
const BATCH_BYTES: usize = 16 * 1024;

async fn export(
    state: ServerState,
    session: Session,
    query: Option<String>,
    format: Format,
) -> Response {
    let ctx = match authorize(&state.app.pool, &session).await {
        Ok(ctx) => ctx,
        Err(refusal) => return refusal,
    };
    let filters = match parse_filters(query.as_deref()) {
        Ok(filters) => filters,
        Err(err) => return (StatusCode::BAD_REQUEST, err.to_string()).into_response(),
    };
    tracing::info!(user.id = %ctx.user.id, export.format = format.extension(), "audit log exported");
    let (batches, mut received) = mpsc::channel(4);
    tokio::spawn(produce(state.app.pool.clone(), filters, format, batches));
    // The first batch comes once the query has answered, so a failure before any row is
    // still a clean 500 rather than a 200 that breaks off.
    let first = match received.recv().await {
        Some(Ok(batch)) => batch,
        Some(Err(ExportFailed)) | None => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                AppError::Internal.to_string(),
            )
                .into_response();
        }
    };
    let rest = futures::stream::unfold(received, |mut received| async move {
        received.recv().await.map(|batch| (batch, received))
    });
    let body = futures::stream::once(async move { Ok(first) }).chain(rest);
    let filename = format!(
        "attachment; filename=\"strad-audit-{}.{}\"",
        OffsetDateTime::now_utc().date(),
        format.extension()
    );
    (
        [
            (header::CONTENT_TYPE, format.content_type().to_owned()),
            (header::CONTENT_DISPOSITION, filename),
            (header::CACHE_CONTROL, "no-store".to_owned()),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// Auditors and admins may export; anyone else gets 401 (anonymous) or 403.
async fn authorize(pool: &PgPool, session: &Session) -> Result<RequestContext, Response> {
    let refuse = |error: AppError| {
        let status =
            StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, error.to_string()).into_response()
    };
    match RequestContext::from_session(pool, session).await {
        Ok(Some(ctx))
            if ctx
                .roles
                .iter()
                .any(|r| matches!(r, Role::Auditor | Role::Admin)) =>
        {
            Ok(ctx)
        }
        Ok(Some(_)) => Err(refuse(AppError::Forbidden)),
        Ok(None) => Err(refuse(AppError::Unauthorized)),
        Err(err) => Err(refuse(err)),
    }
}

/// The body broke off on a database error (already logged); the client sees the response
/// end early, never the error's text.
#[derive(Debug, thiserror::Error)]
#[error("the audit export stopped early")]
struct ExportFailed;

struct ExportRow {
    id: i64,
    at: OffsetDateTime,
    actor_id: Option<Uuid>,
    actor_email: Option<String>,
    kind: String,
    slug: Option<String>,
    payload: Value,
    prev_hash: Vec<u8>,
    hash: Vec<u8>,
}

/// Reads the rows and sends them, encoded, in batches. A full channel waits for the client
/// to read; a closed one (the client left) stops the query.
async fn produce(
    pool: PgPool,
    filters: Filters,
    format: Format,
    batches: mpsc::Sender<Result<Bytes, ExportFailed>>,
) {
    let mut rows = sqlx::query_as!(
        ExportRow,
        "SELECT id, at, actor_id, actor_email, kind, slug, payload, prev_hash, hash
         FROM audit_log
         WHERE ($1::timestamptz IS NULL OR at >= $1)
           AND ($2::timestamptz IS NULL OR at < $2)
           AND ($3::text IS NULL OR lower(actor_email) = lower($3))
           AND ($4::text IS NULL OR slug = $4)
           AND ($5::text IS NULL OR kind = $5)
         ORDER BY id",
        filters.since,
        filters.until,
        filters.person,
        filters.slug,
        filters.kind,
    )
    .fetch(&pool);
    let mut buffer = format.opening().to_vec();
    let mut first = true;
    loop {
        let failure = match rows.try_next().await {
            Ok(Some(row)) => match format.write_row(&row, first, &mut buffer) {
                Ok(()) => {
                    first = false;
                    if buffer.len() >= BATCH_BYTES {
                        let batch = Bytes::from(std::mem::take(&mut buffer));
                        if batches.send(Ok(batch)).await.is_err() {
                            return;
                        }
                    }
                    continue;
                }
                Err(err) => err.to_string(),
            },
            Ok(None) => {
                buffer.extend_from_slice(format.closing());
                let _ = batches.send(Ok(Bytes::from(buffer))).await;
                return;
            }
            Err(err) => err.to_string(),
        };
        tracing::error!(error.message = %failure, "audit export stopped");
        let _ = batches.send(Err(ExportFailed)).await;
        return;
    }
}

#[derive(Clone, Copy, Debug)]
enum Format {
    Csv,
    Json,
}

impl Format {
    fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Json => "json",
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8",
            Format::Json => "application/json",
        }
    }

    fn opening(self) -> &'static [u8] {
        match self {
            Format::Csv => b"id,at,actor_email,kind,slug,payload,hash\r\n",
            Format::Json => b"[",
        }
    }

    fn closing(self) -> &'static [u8] {
        match self {
            Format::Csv => b"",
            Format::Json => b"]\n",
        }
    }

    fn write_row(self, row: &ExportRow, first: bool, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let at = rfc3339(row.at);
        match self {
            Format::Csv => {
                let fields = [
                    Cow::Owned(row.id.to_string()),
                    Cow::Owned(at),
                    Cow::Borrowed(row.actor_email.as_deref().unwrap_or_default()),
                    Cow::Borrowed(row.kind.as_str()),
                    Cow::Borrowed(row.slug.as_deref().unwrap_or_default()),
                    Cow::Owned(serde_json::to_string(&row.payload)?),
                    Cow::Owned(hex::encode(&row.hash)),
                ];
                let line: Vec<Cow<str>> = fields.iter().map(|f| csv_field(f)).collect();
                out.extend_from_slice(line.join(",").as_bytes());
                out.extend_from_slice(b"\r\n");
            }
            Format::Json => {
                if !first {
                    out.extend_from_slice(b",\n");
                }
                serde_json::to_writer(
                    &mut *out,
                    &JsonRow {
                        id: row.id,
                        at,
                        actor_id: row.actor_id,
                        actor_email: row.actor_email.as_deref(),
                        kind: &row.kind,
                        slug: row.slug.as_deref(),
                        payload: &row.payload,
                        prev_hash: hex::encode(&row.prev_hash),
                        hash: hex::encode(&row.hash),
                    },
                )?;
            }
        }
        Ok(())
    }
}

#[derive(Serialize)]
struct JsonRow<'a> {
    id: i64,
    at: String,
    actor_id: Option<Uuid>,
    actor_email: Option<&'a str>,
    kind: &'a str,
    slug: Option<&'a str>,
    payload: &'a Value,
    prev_hash: String,
    hash: String,
}

fn rfc3339(at: OffsetDateTime) -> String {
    at.to_offset(UtcOffset::UTC)
        .format(&Rfc3339)
        .unwrap_or_default()
}

/// First characters that make a spreadsheet read a cell as a formula ("CSV injection"): a
/// field starting with one gets a leading `'`, which spreadsheets show as text.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// One CSV field: neutralised against formulas, then quoted per RFC 4180 when it holds a
/// comma, a quote or a line break.
fn csv_field(value: &str) -> Cow<'_, str> {
    let value: Cow<str> = if value.starts_with(FORMULA_STARTS) {
        Cow::Owned(format!("'{value}"))
    } else {
        Cow::Borrowed(value)
    };
    if value.contains([',', '"', '\r', '\n']) {
        Cow::Owned(format!("\"{}\"", value.replace('"', "\"\"")))
    } else {
        value
    }
}

/// The export's filters; `None` does not filter.
#[derive(Debug, Default, PartialEq, Eq)]
struct Filters {
    /// Inclusive.
    since: Option<OffsetDateTime>,
    /// Exclusive.
    until: Option<OffsetDateTime>,
    /// An actor's email, compared case-insensitively.
    person: Option<String>,
    slug: Option<String>,
    kind: Option<String>,
}

/// Client-safe: the messages name the filter, never echo the value.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum FilterError {
    #[error("{0}: expected a date (YYYY-MM-DD) or an RFC 3339 time")]
    Time(&'static str),
    #[error("{0}: given more than once")]
    Repeated(&'static str),
    #[error("unknown filter: the filters are since, until, person, slug and kind")]
    Unknown,
}

const FILTER_NAMES: [&str; 5] = ["since", "until", "person", "slug", "kind"];

/// Parses the query string. Empty values (an unfilled form field) do not filter; an unknown
/// name is refused so a misspelt filter does not silently export everything.
fn parse_filters(query: Option<&str>) -> Result<Filters, FilterError> {
    let mut values: [Option<String>; 5] = Default::default();
    for (name, value) in url::form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let slot = FILTER_NAMES
            .iter()
            .position(|known| *known == name)
            .ok_or(FilterError::Unknown)?;
        if values[slot].is_some() {
            return Err(FilterError::Repeated(FILTER_NAMES[slot]));
        }
        values[slot] = Some(value.trim().to_owned());
    }
    let [since, until, person, slug, kind] = values.map(|v| v.filter(|v| !v.is_empty()));
    let time = |name: &'static str, raw: Option<String>| {
        raw.map(|raw| parse_time(&raw).ok_or(FilterError::Time(name)))
            .transpose()
    };
    Ok(Filters {
        since: time("since", since)?,
        until: time("until", until)?,
        person,
        slug,
        kind,
    })
}

/// `YYYY-MM-DD` (midnight UTC) or an RFC 3339 time.
fn parse_time(raw: &str) -> Option<OffsetDateTime> {
    if let Ok(at) = OffsetDateTime::parse(raw, &Rfc3339) {
        return Some(at.to_offset(UtcOffset::UTC));
    }
    let date = Date::parse(raw, format_description!("[year]-[month]-[day]")).ok()?;
    Some(date.midnight().assume_utc())
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    use super::*;

    #[test]
    fn plain_fields_are_left_alone() {
        for plain in [
            "",
            "sign_in",
            "alice@example.com",
            "2024-05-01T10:00:00Z",
            "{}",
            "a b'c",
        ] {
            assert_eq!(csv_field(plain), plain);
        }
    }

    #[test]
    fn fields_with_commas_quotes_or_line_breaks_are_quoted_with_quotes_doubled() {
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("one\ntwo"), "\"one\ntwo\"");
        assert_eq!(csv_field("one\r\ntwo"), "\"one\r\ntwo\"");
        assert_eq!(csv_field("\""), "\"\"\"\"");
    }

    #[test]
    fn fields_a_spreadsheet_would_run_as_formulas_start_with_an_apostrophe() {
        assert_eq!(csv_field("=1+1"), "'=1+1");
        assert_eq!(csv_field("+1"), "'+1");
        assert_eq!(csv_field("-1"), "'-1");
        assert_eq!(csv_field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(csv_field("\tx"), "'\tx");
        assert_eq!(csv_field("\rx"), "\"'\rx\"");
    }

    #[test]
    fn a_formula_with_quotes_and_commas_is_neutralised_then_quoted() {
        assert_eq!(
            csv_field("=HYPERLINK(\"http://evil.example\",\"x\")"),
            "\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"x\"\")\""
        );
    }

    #[test]
    fn formula_characters_after_the_start_are_harmless() {
        assert_eq!(csv_field("a=b"), "a=b");
        assert_eq!(csv_field("x-1"), "x-1");
    }

    #[test]
    fn no_query_or_empty_values_filter_nothing() {
        assert_eq!(parse_filters(None), Ok(Filters::default()));
        assert_eq!(parse_filters(Some("")), Ok(Filters::default()));
        assert_eq!(
            parse_filters(Some("since=&until=&person=&slug=&kind=")),
            Ok(Filters::default())
        );
    }

    #[test]
    fn a_date_is_midnight_utc() {
        let filters = parse_filters(Some("since=2024-05-01&until=2024-05-02")).unwrap();
        assert_eq!(filters.since, Some(datetime!(2024-05-01 0:00 UTC)));
        assert_eq!(filters.until, Some(datetime!(2024-05-02 0:00 UTC)));
    }

    #[test]
    fn an_rfc3339_time_keeps_its_instant() {
        let filters = parse_filters(Some(
            "since=2024-05-01T12:30:00.25%2B02:00&until=2024-05-01T23:00:00Z",
        ))
        .unwrap();
        assert_eq!(filters.since, Some(datetime!(2024-05-01 10:30:00.25 UTC)));
        assert_eq!(filters.until, Some(datetime!(2024-05-01 23:00 UTC)));
    }

    #[test]
    fn text_filters_are_taken_as_given_after_decoding() {
        let filters =
            parse_filters(Some("person=Alice%40Example.com&slug=github&kind=sign_in")).unwrap();
        assert_eq!(filters.person.as_deref(), Some("Alice@Example.com"));
        assert_eq!(filters.slug.as_deref(), Some("github"));
        assert_eq!(filters.kind.as_deref(), Some("sign_in"));
    }

    #[test]
    fn times_that_are_not_dates_or_rfc3339_are_refused_by_name() {
        for bad in [
            "yesterday",
            "2024-13-01",
            "2024-05-01T10:00",
            "05/01/2024",
            "1714557600",
        ] {
            let query = format!("since={bad}");
            assert_eq!(parse_filters(Some(&query)), Err(FilterError::Time("since")));
        }
        assert_eq!(
            parse_filters(Some("until=soon")),
            Err(FilterError::Time("until"))
        );
    }

    #[test]
    fn unknown_or_repeated_filters_are_refused() {
        assert_eq!(parse_filters(Some("actor=x")), Err(FilterError::Unknown));
        assert_eq!(
            parse_filters(Some("kind=a&kind=b")),
            Err(FilterError::Repeated("kind"))
        );
    }

    #[test]
    fn refusal_messages_do_not_echo_the_value() {
        let err = parse_filters(Some("since=%3Cscript%3E")).unwrap_err();
        assert!(!err.to_string().contains("script"));
    }
}
