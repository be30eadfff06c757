use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

/// Rows per page of the audit log.
pub const PAGE_SIZE: i64 = 100;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRowView {
    pub id: i64,
    pub at: String,
    pub actor: Option<String>,
    pub kind: String,
    pub slug: Option<String>,
    /// Compact JSON.
    pub payload: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPageView {
    pub rows: Vec<AuditRowView>,
    /// Pass as `before` for the next (older) page.
    pub next_before: Option<i64>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainReport {
    pub rows: i64,
    pub first_broken: Option<i64>,
    /// The last row; `None` when the log is empty.
    pub head: Option<ChainHead>,
}

/// The chain's last row. Written down outside the database (a ticket, a log shipped
/// elsewhere), it shows later whether rows after it were removed: the chain alone cannot
/// tell a log cut short from one that ended there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainHead {
    pub id: i64,
    /// The row's SHA-256, in lower-case hex.
    pub hash: String,
}

/// One page of the audit log, newest first, filtered by time, person (actor email), slug
/// and kind. Keyset paging on the id keeps every page as fast as the first at any depth.
/// Auditors and admins.
#[server(prefix = "/api", endpoint = "audit/list", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_audit(
    since: Option<String>,
    until: Option<String>,
    person: Option<String>,
    slug: Option<String>,
    kind: Option<String>,
    before: Option<i64>,
) -> Result<AuditPageView, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::error::Responder;
    use crate::servers::ssr::{form::time_filter, views::format_time};
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    RequestContext::require_any(&[Role::Auditor, Role::Admin]).await?;
    let since = time_filter(since.as_deref(), "since").map_err(|e| responder.fail(e))?;
    let until = time_filter(until.as_deref(), "until").map_err(|e| responder.fail(e))?;
    let text = |v: Option<String>| v.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let rows = sqlx::query!(
        "SELECT id, at, actor_email, kind, slug, payload FROM audit_log
             WHERE ($1::timestamptz IS NULL OR at >= $1)
               AND ($2::timestamptz IS NULL OR at < $2)
               AND ($3::text IS NULL OR lower(actor_email) = lower($3))
               AND ($4::text IS NULL OR slug = $4)
               AND ($5::text IS NULL OR kind = $5)
               AND ($6::bigint IS NULL OR id < $6)
             ORDER BY id DESC LIMIT $7",
        since,
        until,
        text(person),
        text(slug),
        text(kind),
        before,
        PAGE_SIZE + 1,
    )
    .fetch_all(&state.pool)
    .await?;
    let more = rows.len() as i64 > PAGE_SIZE;
    let rows: Vec<AuditRowView> = rows
        .into_iter()
        .take(PAGE_SIZE as usize)
        .map(|row| AuditRowView {
            id: row.id,
            at: format_time(row.at),
            actor: row.actor_email,
            kind: row.kind,
            slug: row.slug,
            payload: row.payload.to_string(),
        })
        .collect();
    let next_before = if more {
        rows.last().map(|r| r.id)
    } else {
        None
    };
    Ok(AuditPageView { rows, next_before })
}

/// Walks the whole chain, names the first row that does not hold and the chain's head.
/// Auditors and admins.
#[server(prefix = "/api", endpoint = "audit/verify")]
pub async fn verify_audit() -> Result<ChainReport, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    let state = crate::state::AppState::from_context()?;
    RequestContext::require_any(&[Role::Auditor, Role::Admin]).await?;
    Ok(super::ssr::chain::check(&state.pool).await?)
}
