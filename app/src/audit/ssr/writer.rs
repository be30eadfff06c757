//! Appending to the audit log. Every row's hash covers its own content and the previous
//! row's hash; writers take one transaction-scoped advisory lock so concurrent events line
//! up into a single chain. Callers pass their own transaction, so a change and its audit
//! row commit together or not at all.

use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use uuid::Uuid;

pub use super::event::AuditEvent;

/// Advisory-lock key that serializes audit writers ("stradaud" in ASCII), taken by
/// `audit_chain_head` (migration 0015).
pub const AUDIT_LOCK: i64 = 0x7374_7261_6461_7564;
pub const GENESIS: [u8; 32] = [0; 32];

/// Who did it: a person, or strad itself (discovery, start-up).
#[derive(Clone, Debug, Default)]
pub struct Actor {
    pub id: Option<Uuid>,
    pub email: Option<String>,
}

impl Actor {
    pub fn system() -> Self {
        Self::default()
    }

    pub fn person(id: Uuid, email: &str) -> Self {
        Self {
            id: Some(id),
            email: Some(email.to_owned()),
        }
    }
}

/// The hash of one row. Each field is length-prefixed so no two rows can share an encoding.
#[allow(clippy::too_many_arguments)]
pub fn row_hash(
    prev: &[u8],
    at_micros: i64,
    actor_id: Option<Uuid>,
    actor_email: Option<&str>,
    kind: &str,
    slug: Option<&str>,
    payload_text: &str,
) -> [u8; 32] {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_be_bytes());
        hasher.update(bytes);
    };
    field(prev);
    field(&at_micros.to_be_bytes());
    field(
        actor_id
            .map(|id| id.to_string())
            .unwrap_or_default()
            .as_bytes(),
    );
    field(actor_email.unwrap_or_default().as_bytes());
    field(kind.as_bytes());
    field(slug.unwrap_or_default().as_bytes());
    field(payload_text.as_bytes());
    hasher.finalize().into()
}

/// Appends one event inside the caller's transaction; returns its id. A transaction, not a
/// bare connection: the chain's advisory lock lasts until commit, so the change and its
/// audit row commit together and no other row can slip in between.
pub async fn append(
    tx: &mut Transaction<'_, Postgres>,
    actor: &Actor,
    event: &AuditEvent,
    slug: Option<&str>,
) -> Result<i64, sqlx::Error> {
    let connection: &mut PgConnection = tx;
    append_one(connection, actor, event, slug, None).await
}

/// Appends one event on its own: one statement, its own transaction, one round trip.
pub async fn append_alone(
    pool: &PgPool,
    actor: &Actor,
    event: &AuditEvent,
    slug: Option<&str>,
) -> Result<i64, sqlx::Error> {
    let mut connection = pool.acquire().await?;
    append_one(&mut connection, actor, event, slug, None).await
}

/// One event for `append_many` (and `appender::Appender`).
pub struct Event {
    pub actor: Actor,
    pub event: AuditEvent,
    pub slug: Option<String>,
}

/// When the rows an `Appender` commits reach the disk. Either way a caller waits until its
/// row is committed: in the chain, visible to auditors, and safe from a crash of strad. The
/// choice is whether it also waits for PostgreSQL to flush the commit to disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flush {
    /// PostgreSQL flushes the rows in the background (`synchronous_commit = off` for their
    /// transaction only), within three times `wal_writer_delay` (0.6 s by default). A crash
    /// of PostgreSQL or of its machine in that time loses the last rows, as a suffix: the
    /// chain stays whole and nothing else is lost or made inconsistent. A call then does not
    /// wait for the disk (1–4 ms on a small cloud disk).
    #[default]
    Background,
    /// The caller also waits for the flush, as the database is set to do (by default,
    /// `synchronous_commit = on`).
    BeforeAnswer,
}

/// Appends `events` in one statement, which is its own transaction unless `connection` is
/// in one already, and sets how that transaction's commit is flushed (`Flush`). `set_config`
/// with `is_local` lasts until the transaction ends, so the writer's connection carries
/// nothing over to its next statement or back to the pool.
pub async fn append_many(
    connection: &mut PgConnection,
    events: &[&Event],
    flush: Flush,
) -> Result<Vec<i64>, sqlx::Error> {
    if let [one] = events {
        let id = append_one(
            connection,
            &one.actor,
            &one.event,
            one.slug.as_deref(),
            Some(flush),
        );
        return Ok(vec![id.await?]);
    }
    let ids: Vec<Option<Uuid>> = events.iter().map(|e| e.actor.id).collect();
    let emails: Vec<Option<&str>> = events.iter().map(|e| e.actor.email.as_deref()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind().as_str()).collect();
    let slugs: Vec<Option<&str>> = events.iter().map(|e| e.slug.as_deref()).collect();
    let payloads: Vec<Value> = events.iter().map(|e| e.event.payload()).collect();
    // The arrays hold NULLs (no actor, no slug), which the macros' array types do not
    // spell: `as _` binds them as they are.
    let ids = sqlx::query_scalar!(
        r#"SELECT audit_append_many($1, $2, $3, $4, $5::jsonb[]) AS "id!"
         FROM set_config('synchronous_commit',
                         CASE WHEN $6 THEN 'off' ELSE current_setting('synchronous_commit') END,
                         true) AS flushed"#,
        ids as _,
        emails as _,
        kinds as _,
        slugs as _,
        payloads as _,
        flush == Flush::Background,
    )
    .fetch_all(connection)
    .await?;
    crate::metrics::audit_rows(ids.len());
    Ok(ids)
}

/// Appends one row in one statement, which is its own transaction unless `connection` is in
/// one already: `audit_chain_head` (migration 0015) takes the chain's lock and reads the last
/// hash, `audit_row_hash` hashes the row as `row_hash` does, and the INSERT is strad's own
/// prepared statement, with no PL/pgSQL around it. With `flush`, sets how the transaction's
/// commit is flushed, as `append_many` does; without, leaves the caller's setting.
async fn append_one(
    connection: &mut PgConnection,
    actor: &Actor,
    event: &AuditEvent,
    slug: Option<&str>,
    flush: Option<Flush>,
) -> Result<i64, sqlx::Error> {
    let id = sqlx::query_scalar!(
        r#"INSERT INTO audit_log (at, actor_id, actor_email, kind, slug, payload, prev_hash, hash)
         SELECT head.at, $1, $2, $3, $4, $5, head.prev,
                audit_row_hash(head.prev, head.at, $1, $2, $3, $4, $5)
         FROM audit_chain_head() AS head,
              set_config('synchronous_commit',
                         CASE WHEN $6 THEN 'off' ELSE current_setting('synchronous_commit') END,
                         true) AS flushed
         RETURNING id"#,
        actor.id,
        actor.email.as_deref(),
        event.kind().as_str(),
        slug,
        event.payload(),
        flush == Some(Flush::Background),
    )
    .fetch_one(connection)
    .await?;
    crate::metrics::audit_rows(1);
    Ok(id)
}

/// Walks the chain in id order; returns the id of the first row whose hash or link does not
/// hold, or `None` when the whole chain is intact.
pub async fn first_broken_row(conn: &mut PgConnection) -> Result<Option<i64>, sqlx::Error> {
    use futures::TryStreamExt;
    let mut rows = sqlx::query!(
        r#"SELECT id, (extract(epoch from at) * 1000000)::bigint AS "at_micros!", actor_id,
                actor_email, kind, slug, payload::text AS "payload_text!", prev_hash, hash
         FROM audit_log ORDER BY id"#,
    )
    .fetch(&mut *conn);
    let mut prev = GENESIS.to_vec();
    while let Some(row) = rows.try_next().await? {
        let expected = row_hash(
            &prev,
            row.at_micros,
            row.actor_id,
            row.actor_email.as_deref(),
            &row.kind,
            row.slug.as_deref(),
            &row.payload_text,
        );
        if row.prev_hash != prev || row.hash != expected {
            return Ok(Some(row.id));
        }
        prev = row.hash;
    }
    Ok(None)
}
