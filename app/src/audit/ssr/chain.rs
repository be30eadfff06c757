//! The chain check, as `strad audit verify` and the `/audit` page both run it (SPEC §10).

use sqlx::PgPool;

use super::writer;
use crate::audit::{ChainHead, ChainReport};

/// Walks the chain, counts the rows and reads the head in one read-only snapshot, so rows
/// appended while it runs are in none of them.
pub async fn check(pool: &PgPool) -> Result<ChainReport, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query!("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(&mut *tx)
        .await?;
    let first_broken = writer::first_broken_row(&mut tx).await?;
    let row = sqlx::query!(
        r#"SELECT (SELECT count(*) FROM audit_log) AS "rows!", head.id AS "head_id?",
                head.hash AS "head_hash?"
         FROM (SELECT 1) one
         LEFT JOIN (SELECT id, hash FROM audit_log ORDER BY id DESC LIMIT 1) head ON true"#,
    )
    .fetch_one(&mut *tx)
    .await?;
    tx.rollback().await?;
    let head = row.head_id.zip(row.head_hash).map(|(id, hash)| ChainHead {
        id,
        hash: hex::encode(hash),
    });
    Ok(ChainReport {
        rows: row.rows,
        first_broken,
        head,
    })
}
