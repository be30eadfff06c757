//! The admin's read-only marks (SPEC §5). A mark holds the tool's fingerprint at the time:
//! when discovery sees a new fingerprint, the mark is cleared (and the clearing audited).

use sqlx::PgExecutor;
use uuid::Uuid;

use crate::audit::ssr::writer::{self, Actor, AuditEvent};

/// Marks `tool` read-only at its current fingerprint `digest`.
pub async fn mark(
    db: impl PgExecutor<'_>,
    slug: &str,
    tool: &str,
    digest: &str,
    by: Uuid,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO read_only_marks (slug, tool, digest, marked_by) VALUES ($1, $2, $3, $4)
         ON CONFLICT (slug, tool) DO UPDATE SET digest = EXCLUDED.digest,
            marked_by = EXCLUDED.marked_by, marked_at = now()",
        slug,
        tool,
        digest,
        by,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Removes a mark; returns whether there was one.
pub async fn unmark(db: impl PgExecutor<'_>, slug: &str, tool: &str) -> Result<bool, sqlx::Error> {
    let result = sqlx::query!(
        "DELETE FROM read_only_marks WHERE slug = $1 AND tool = $2",
        slug,
        tool,
    )
    .execute(db)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Tools of `slug` marked read-only at their current fingerprint.
pub async fn marked(db: impl PgExecutor<'_>, slug: &str) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT m.tool FROM read_only_marks m
         JOIN server_items i ON i.slug = m.slug AND i.kind = 'tool' AND i.key = m.tool AND i.digest = m.digest
         WHERE m.slug = $1 ORDER BY m.tool",
        slug,
    )
    .fetch_all(db)
    .await
}

/// Clears every mark whose tool changed fingerprint or disappeared, auditing each; runs in
/// discovery's transaction, after the new items are stored.
pub async fn clear_stale(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    slug: &str,
) -> Result<Vec<String>, sqlx::Error> {
    let cleared = sqlx::query!(
        "DELETE FROM read_only_marks m
         WHERE m.slug = $1 AND NOT EXISTS (
            SELECT 1 FROM server_items i
            WHERE i.slug = m.slug AND i.kind = 'tool' AND i.key = m.tool AND i.digest = m.digest)
         RETURNING m.tool, m.digest",
        slug,
    )
    .fetch_all(&mut **tx)
    .await?;
    for mark in &cleared {
        let (tool, digest) = (&mark.tool, &mark.digest);
        let event = AuditEvent::ReadOnlyMarkCleared {
            tool: tool.clone(),
            marked_digest: digest.clone(),
        };
        writer::append(tx, &Actor::system(), &event, Some(slug)).await?;
        tracing::warn!(server.slug = %slug, tool = %tool, "read-only mark cleared: the tool's definition changed");
    }
    Ok(cleared.into_iter().map(|mark| mark.tool).collect())
}
