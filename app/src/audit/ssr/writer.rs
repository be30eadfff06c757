//! Appending to the audit log. Every row's hash covers its own content and the previous
//! row's hash; writers take one transaction-scoped advisory lock so concurrent events line
//! up into a single chain. Callers pass their own transaction, so a change and its audit
//! row commit together or not at all.

use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool, Postgres, Row, Transaction};
use time::OffsetDateTime;
use uuid::Uuid;

/// Advisory-lock key that serializes audit writers ("strad audit" in ASCII).
const AUDIT_LOCK: i64 = 0x7374_7261_6461_7564;
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
/// bare connection: the advisory lock lasts until commit, and only a transaction makes it
/// hold across the read of the previous hash and the insert.
pub async fn append(
    tx: &mut Transaction<'_, Postgres>,
    actor: &Actor,
    kind: &str,
    slug: Option<&str>,
    payload: &Value,
) -> Result<i64, sqlx::Error> {
    let conn: &mut PgConnection = tx;
    // The payload is hashed in the text form Postgres gives jsonb back in, so a verifier
    // reading `payload::text` later computes the same bytes. Done before the lock: it needs
    // no order, and every writer waits for the lock's holder.
    let payload_text: String = sqlx::query_scalar("SELECT ($1::jsonb)::text")
        .bind(payload)
        .fetch_one(&mut *conn)
        .await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(AUDIT_LOCK)
        .execute(&mut *conn)
        .await?;
    let prev: Vec<u8> = sqlx::query_scalar("SELECT hash FROM audit_log ORDER BY id DESC LIMIT 1")
        .fetch_optional(&mut *conn)
        .await?
        .unwrap_or_else(|| GENESIS.to_vec());
    let now = OffsetDateTime::now_utc();
    let at_micros = (now.unix_timestamp_nanos() / 1000) as i64;
    let at = OffsetDateTime::from_unix_timestamp_nanos(at_micros as i128 * 1000).unwrap_or(now);
    let hash = row_hash(
        &prev,
        at_micros,
        actor.id,
        actor.email.as_deref(),
        kind,
        slug,
        &payload_text,
    );
    let row = sqlx::query(
        "INSERT INTO audit_log (at, actor_id, actor_email, kind, slug, payload, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8) RETURNING id",
    )
    .bind(at)
    .bind(actor.id)
    .bind(&actor.email)
    .bind(kind)
    .bind(slug)
    .bind(&payload_text)
    .bind(&prev)
    .bind(hash.as_slice())
    .fetch_one(&mut *conn)
    .await?;
    row.try_get("id")
}

/// Appends one event on its own (a transaction of its own, committed); returns its id.
pub async fn append_alone(
    pool: &PgPool,
    actor: &Actor,
    kind: &str,
    slug: Option<&str>,
    payload: &Value,
) -> Result<i64, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let id = append(&mut tx, actor, kind, slug, payload).await?;
    tx.commit().await?;
    Ok(id)
}

/// Walks the chain in id order; returns the id of the first row whose hash or link does not
/// hold, or `None` when the whole chain is intact.
pub async fn first_broken_row(conn: &mut PgConnection) -> Result<Option<i64>, sqlx::Error> {
    use futures::TryStreamExt;
    let mut rows = sqlx::query(
        "SELECT id, (extract(epoch from at) * 1000000)::bigint AS at_micros, actor_id, actor_email,
                kind, slug, payload::text AS payload_text, prev_hash, hash
         FROM audit_log ORDER BY id",
    )
    .fetch(&mut *conn);
    let mut prev = GENESIS.to_vec();
    while let Some(row) = rows.try_next().await? {
        let id: i64 = row.try_get("id")?;
        let stored_prev: Vec<u8> = row.try_get("prev_hash")?;
        let stored: Vec<u8> = row.try_get("hash")?;
        let actor_email: Option<String> = row.try_get("actor_email")?;
        let slug: Option<String> = row.try_get("slug")?;
        let kind: String = row.try_get("kind")?;
        let payload_text: String = row.try_get("payload_text")?;
        let expected = row_hash(
            &prev,
            row.try_get("at_micros")?,
            row.try_get("actor_id")?,
            actor_email.as_deref(),
            &kind,
            slug.as_deref(),
            &payload_text,
        );
        if stored_prev != prev || stored != expected {
            return Ok(Some(id));
        }
        prev = stored;
    }
    Ok(None)
}
