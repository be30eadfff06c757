//! Benchmark: audit-log paging at a million rows, through the real server function. Run
//! with `cargo bench -p strad-server --bench audit_paging`; `STRAD_BENCH_AUDIT_ROWS` sets
//! how many rows (a million unless it says otherwise).

#[allow(
    dead_code,
    unused_imports,
    reason = "the benchmarks use a few of the tests' helpers"
)]
#[path = "../tests/behaviour/support/mod.rs"]
mod support;

#[path = "support/fresh_database.rs"]
mod fresh_database;

use std::time::Instant;

use fresh_database::FreshDatabase;
use sqlx::PgPool;
use support::*;

const ROWS: i64 = 1_000_000;

/// Runs on one thread, as `#[sqlx::test]` does; strad runs on its own runtime beside it.
fn main() {
    let rows = std::env::var("STRAD_BENCH_AUDIT_ROWS")
        .ok()
        .map(|n| n.parse().expect("STRAD_BENCH_AUDIT_ROWS is a number"))
        .unwrap_or(ROWS);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let database = FreshDatabase::create("audit_paging").await;
        audit_paging_stays_fast_at_a_million_rows(database.pool.clone(), rows).await;
        database.drop().await;
    });
}

async fn audit_paging_stays_fast_at_a_million_rows(pool: PgPool, rows: i64) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    // A million rows of plausible shape (the chain is not what is measured here).
    sqlx::query(
        "INSERT INTO audit_log (at, actor_email, kind, slug, payload, prev_hash, hash)
         SELECT now() - make_interval(secs => ($1 - g)),
                'person' || (g % 500) || '@example.com',
                (ARRAY['sign_in','app_change','entitlement_granted','policy_changed'])[1 + g % 4],
                'server-' || (g % 50),
                jsonb_build_object('n', g),
                '\\x00', '\\x00'
         FROM generate_series(1, $1) g",
    )
    .bind(rows)
    .execute(&app.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE audit_log")
        .execute(&app.pool)
        .await
        .unwrap();
    let max: i64 = sqlx::query_scalar("SELECT max(id) FROM audit_log")
        .fetch_one(&app.pool)
        .await
        .unwrap();

    let deep = (max / 2).to_string();
    let cases: Vec<(&str, Vec<(&str, &str)>)> = vec![
        ("first page, no filter", vec![]),
        (
            "page at row 500 000, no filter",
            vec![("before", deep.as_str())],
        ),
        ("first page, kind", vec![("kind", "policy_changed")]),
        (
            "page at row 500 000, kind",
            vec![("kind", "policy_changed"), ("before", deep.as_str())],
        ),
        (
            "first page, person",
            vec![("person", "person7@example.com")],
        ),
        ("first page, server", vec![("slug", "server-3")]),
        (
            "first page, person + server",
            vec![("person", "person7@example.com"), ("slug", "server-7")],
        ),
    ];
    for (name, form) in cases {
        // Warm once, then take the median of 9.
        server_fn(&app, &app.client, "audit/list", &form).await;
        let mut times: Vec<f64> = Vec::new();
        for _ in 0..9 {
            let started = Instant::now();
            let response = server_fn(&app, &app.client, "audit/list", &form).await;
            assert_eq!(response.status(), 200);
            let page: serde_json::Value = response.json().await.unwrap();
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            assert!(!page["rows"].as_array().unwrap().is_empty(), "{name}");
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        println!(
            "{name}: median {:.1} ms (min {:.1}, max {:.1})",
            times[4], times[0], times[8]
        );
    }
}
