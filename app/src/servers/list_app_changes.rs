use leptos::prelude::*;

use super::views::AppChangeView;
use crate::error::AppError;

/// The app-change log: newest first, filtered by server and time (`YYYY-MM-DD` or RFC 3339,
/// inclusive `since`, exclusive `until`), at most 200 rows. Auditors and admins.
#[server(prefix = "/api", endpoint = "servers/app-changes", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_app_changes(
    slug: Option<String>,
    since: Option<String>,
    until: Option<String>,
) -> Result<Vec<AppChangeView>, AppError> {
    use super::ssr::{form, views};
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::error::Responder;
    use serde_json::Value;

    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    RequestContext::require_any(&[Role::Auditor, Role::Admin]).await?;
    let slug = slug.filter(|s| !s.is_empty());
    let since = form::time_filter(since.as_deref(), "since").map_err(|e| responder.fail(e))?;
    let until = form::time_filter(until.as_deref(), "until").map_err(|e| responder.fail(e))?;
    let rows = sqlx::query!(
        "SELECT id, at, slug, payload FROM audit_log
         WHERE kind = 'app_change'
           AND ($1::text IS NULL OR slug = $1)
           AND ($2::timestamptz IS NULL OR at >= $2)
           AND ($3::timestamptz IS NULL OR at < $3)
         ORDER BY at DESC, id DESC LIMIT 200",
        slug,
        since,
        until,
    )
    .fetch_all(&state.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let payload = row.payload;
            let text = |key: &str| payload.get(key).and_then(Value::as_str).map(str::to_owned);
            AppChangeView {
                id: row.id,
                at: views::format_time(row.at),
                slug: row.slug.unwrap_or_default(),
                item_kind: text("item_kind").unwrap_or_default(),
                item: text("item").unwrap_or_default(),
                change: text("change").unwrap_or_default(),
                old_digest: text("old_digest"),
                new_digest: text("new_digest"),
                old_size: payload.get("old_size").and_then(Value::as_i64),
                new_size: payload.get("new_size").and_then(Value::as_i64),
                diff: text("diff").unwrap_or_default(),
            }
        })
        .collect())
}
