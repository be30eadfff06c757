//! The audit log's hash chain (SPEC §10): appends line up into one chain even when made
//! concurrently, any edit, deletion or swap is found at the right row, `strad audit verify`
//! reports it, and auditors export the log as CSV or JSON.

use std::process::{Command, Output};
use std::time::Duration;

use crate::support::*;
use app::audit::ssr::appender;
use app::audit::ssr::event::ToolCallRow;
use app::audit::ssr::writer::{self, Actor, AuditEvent, GENESIS};
use app::entitlements::policy::Surface;
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

mod exports;
mod tampering;
mod tool_call_rows;
mod verify_command;

async fn migrated(pool: &PgPool) {
    strad_server::db::migrate(pool).await.expect("migrations");
}

/// Appends one row in its own transaction, as an audited change does.
async fn append(
    pool: &PgPool,
    actor: &Actor,
    kind: &str,
    slug: Option<&str>,
    payload: Value,
) -> i64 {
    let mut tx = pool.begin().await.unwrap();
    let id = append_row(&mut tx, actor, kind, slug, &payload).await;
    tx.commit().await.unwrap();
    id
}

/// Appends one row as stored, whatever its kind and payload, through `audit_append`, which
/// takes the chain head and hashes the row as the writer's own INSERT does (migration 0015):
/// the chain and the exports must hold for any row, a kind this build does not write or a
/// hostile one included.
async fn append_row(
    connection: &mut sqlx::PgConnection,
    actor: &Actor,
    kind: &str,
    slug: Option<&str>,
    payload: &Value,
) -> i64 {
    sqlx::query_scalar("SELECT audit_append($1, $2, $3, $4, $5::jsonb)")
        .bind(actor.id)
        .bind(actor.email.as_deref())
        .bind(kind)
        .bind(slug)
        .bind(payload)
        .fetch_one(connection)
        .await
        .unwrap()
}

async fn first_broken_row(pool: &PgPool) -> Option<i64> {
    let mut conn = pool.acquire().await.unwrap();
    writer::first_broken_row(&mut conn).await.unwrap()
}

/// The database refuses to change audit rows (migration 0009), but its triggers stop
/// ordinary statements only: the table's owner or a superuser, as the test role is, can
/// disable them. These tests do, to play that person and prove the hash chain finds what
/// the triggers cannot stop.
async fn allow_tampering(pool: &PgPool) {
    sqlx::query(
        "ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only,
                               DISABLE TRIGGER audit_log_no_truncate",
    )
    .execute(pool)
    .await
    .unwrap();
}

/// The chain's last row: its id and hash.
async fn head(pool: &PgPool) -> (i64, String) {
    let (id, hash): (i64, Vec<u8>) =
        sqlx::query_as("SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1")
            .fetch_one(pool)
            .await
            .unwrap();
    (id, hex::encode(hash))
}

fn alice() -> Actor {
    Actor::person(Uuid::new_v4(), "alice@example.com")
}

/// Five rows from people and from strad itself; returns their ids in order.
async fn five_rows(pool: &PgPool) -> Vec<i64> {
    let alice = alice();
    vec![
        append(pool, &alice, "sign_in", None, json!({"via": "browser"})).await,
        append(
            pool,
            &Actor::system(),
            "server_registered",
            Some("github"),
            json!({"url": "https://x"}),
        )
        .await,
        append(
            pool,
            &alice,
            "pin",
            Some("github"),
            json!({"tool": "search", "n": 1}),
        )
        .await,
        append(
            pool,
            &alice,
            "revocation",
            Some("github"),
            json!([1, "two", null]),
        )
        .await,
        append(pool, &alice, "sign_out", None, json!({})).await,
    ]
}
