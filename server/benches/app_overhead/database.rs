//! The benchmark's database: its clock, and the maintenance it did while a round ran.

use super::*;

/// The database's clock, as text (its own format, compared by the database).
pub async fn database_clock(pool: &PgPool) -> String {
    sqlx::query_scalar("SELECT clock_timestamp()::text")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The tables of the benchmark's database that autovacuum vacuumed or analyzed after
/// `since`, and autovacuum's work still running (the database's own work, which a round
/// shares the cores with).
pub async fn database_maintenance_since(pool: &PgPool, since: &str) -> String {
    let rows: Vec<(String, bool, bool)> = sqlx::query_as(
        "SELECT relname, coalesce(last_autovacuum > $1::timestamptz, false),
                coalesce(last_autoanalyze > $1::timestamptz, false)
         FROM pg_stat_all_tables
         WHERE last_autovacuum > $1::timestamptz OR last_autoanalyze > $1::timestamptz
         ORDER BY relname",
    )
    .bind(since)
    .fetch_all(pool)
    .await
    .unwrap();
    let list = |pick: fn(&(String, bool, bool)) -> bool| {
        rows.iter()
            .filter(|row| pick(row))
            .map(|row| row.0.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (vacuumed, analyzed) = (list(|r| r.1), list(|r| r.2));
    let mut said = Vec::new();
    if !vacuumed.is_empty() {
        said.push(format!("autovacuum of {vacuumed}"));
    }
    if !analyzed.is_empty() {
        said.push(format!("autoanalyze of {analyzed}"));
    }
    let running: Vec<String> = sqlx::query_scalar(
        "SELECT coalesce(query, '') FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for query in running {
        said.push(format!("still running: {query}"));
    }
    said.join("; ")
}
