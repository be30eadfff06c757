//! The audit log's hash chain (SPEC §10): appends line up into one chain even when made
//! concurrently, any edit, deletion or swap is found at the right row, `strad audit verify`
//! reports it, and auditors export the log as CSV or JSON.

use std::process::{Command, Output};
use std::time::Duration;

use crate::support::*;
use app::audit::ssr::writer::{self, Actor, GENESIS};
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

async fn migrated(pool: &PgPool) {
    strad_server::db::migrate(pool).await.expect("migrations");
}

/// Appends one event in its own transaction, as an audited change does.
async fn append(
    pool: &PgPool,
    actor: &Actor,
    kind: &str,
    slug: Option<&str>,
    payload: Value,
) -> i64 {
    let mut tx = pool.begin().await.unwrap();
    let id = writer::append(&mut tx, actor, kind, slug, &payload)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    id
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

#[sqlx::test(migrations = false)]
async fn appended_rows_verify_with_nothing_broken(pool: PgPool) {
    migrated(&pool).await;
    assert_eq!(
        first_broken_row(&pool).await,
        None,
        "an empty log is intact"
    );
    five_rows(&pool).await;
    assert_eq!(first_broken_row(&pool).await, None);
}

/// The database error of a statement the append-only triggers refused.
fn refused_as_append_only(result: Result<sqlx::postgres::PgQueryResult, sqlx::Error>) {
    let err = result.expect_err("the statement is refused");
    let db = err.as_database_error().expect("a database error");
    assert_eq!(db.constraint(), Some("audit_log_append_only"), "{err}");
}

#[sqlx::test(migrations = false)]
async fn the_database_refuses_to_update_delete_or_truncate_audit_rows(pool: PgPool) {
    migrated(&pool).await;
    let ids = five_rows(&pool).await;
    // The pool strad's own statements run on: the same role as the application's.
    let strads = strad_server::db::pool_options()
        .connect_with((*pool.connect_options()).clone())
        .await
        .unwrap();
    refused_as_append_only(
        sqlx::query("UPDATE audit_log SET payload = '{}' WHERE id = $1")
            .bind(ids[2])
            .execute(&strads)
            .await,
    );
    refused_as_append_only(
        sqlx::query("DELETE FROM audit_log WHERE id = $1")
            .bind(ids[4])
            .execute(&strads)
            .await,
    );
    refused_as_append_only(sqlx::query("TRUNCATE audit_log").execute(&strads).await);
    strads.close().await;
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rows, 5);
    assert_eq!(first_broken_row(&pool).await, None);
    append(&pool, &alice(), "sign_in", None, json!({})).await;
    assert_eq!(first_broken_row(&pool).await, None, "appending still works");
}

#[sqlx::test(migrations = false)]
async fn an_edited_payload_is_found_at_exactly_that_row(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    sqlx::query("UPDATE audit_log SET payload = '{\"tool\": \"delete_everything\", \"n\": 1}' WHERE id = $1")
        .bind(ids[2])
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(first_broken_row(&pool).await, Some(ids[2]));
}

#[sqlx::test(migrations = false)]
async fn an_edited_actor_kind_slug_or_time_is_found_at_that_row(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    for edit in [
        "UPDATE audit_log SET actor_email = 'mallory@example.com' WHERE id = $1",
        "UPDATE audit_log SET actor_id = gen_random_uuid() WHERE id = $1",
        "UPDATE audit_log SET kind = 'nothing_happened' WHERE id = $1",
        "UPDATE audit_log SET slug = 'other' WHERE id = $1",
        "UPDATE audit_log SET at = at - interval '1 microsecond' WHERE id = $1",
    ] {
        sqlx::query("TRUNCATE audit_log")
            .execute(&pool)
            .await
            .unwrap();
        let ids = five_rows(&pool).await;
        sqlx::query(edit).bind(ids[2]).execute(&pool).await.unwrap();
        assert_eq!(first_broken_row(&pool).await, Some(ids[2]), "{edit}");
    }
}

#[sqlx::test(migrations = false)]
async fn a_deleted_middle_row_is_found_at_the_row_after_it(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    sqlx::query("DELETE FROM audit_log WHERE id = $1")
        .bind(ids[2])
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(first_broken_row(&pool).await, Some(ids[3]));
}

#[sqlx::test(migrations = false)]
async fn a_deleted_first_row_is_found_at_the_new_first_row(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    sqlx::query("DELETE FROM audit_log WHERE id = $1")
        .bind(ids[0])
        .execute(&pool)
        .await
        .unwrap();
    assert_eq!(first_broken_row(&pool).await, Some(ids[1]));
}

#[sqlx::test(migrations = false)]
async fn two_swapped_rows_are_found_at_the_first_of_them(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    // Every column the hash covers, plus the stored hashes, trade places between two ids.
    sqlx::query(
        "UPDATE audit_log a
         SET at = b.at, actor_id = b.actor_id, actor_email = b.actor_email, kind = b.kind,
             slug = b.slug, payload = b.payload, prev_hash = b.prev_hash, hash = b.hash
         FROM (SELECT * FROM audit_log WHERE id IN ($1, $2)) b
         WHERE a.id IN ($1, $2) AND b.id <> a.id",
    )
    .bind(ids[1])
    .bind(ids[3])
    .execute(&pool)
    .await
    .unwrap();
    let kinds: Vec<String> = sqlx::query_scalar("SELECT kind FROM audit_log ORDER BY id")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert_eq!(kinds[1], "revocation", "the swap happened");
    assert_eq!(first_broken_row(&pool).await, Some(ids[1]));
}

#[sqlx::test(migrations = false)]
async fn five_hundred_concurrent_audited_changes_make_one_unbroken_chain(pool: PgPool) {
    migrated(&pool).await;
    let connect = (*pool.connect_options()).clone();
    // sqlx::test runs on one thread; the writers get a runtime with several, and a pool of
    // their own on it, so appends truly race for the lock.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(8)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let writers = sqlx::postgres::PgPoolOptions::new()
                .max_connections(16)
                .connect_with(connect)
                .await
                .unwrap();
            let tasks: Vec<_> = (0..500)
                .map(|n| {
                    let writers = writers.clone();
                    tokio::spawn(async move {
                        let actor = Actor::person(Uuid::new_v4(), &format!("p{n}@example.com"));
                        let mut tx = writers.begin().await.unwrap();
                        // The audited change itself, in the same transaction as its row.
                        sqlx::query("SELECT pg_sleep(0.001)")
                            .execute(&mut *tx)
                            .await
                            .unwrap();
                        writer::append(&mut tx, &actor, "pin", Some("github"), &json!({"n": n}))
                            .await
                            .unwrap();
                        tx.commit().await.unwrap();
                    })
                })
                .collect();
            for task in tasks {
                task.await.expect("every append succeeds");
            }
            writers.close().await;
        });
    })
    .join()
    .expect("the writers finish");

    let links: Vec<(Vec<u8>, Vec<u8>)> =
        sqlx::query_as("SELECT prev_hash, hash FROM audit_log ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(links.len(), 500);
    let mut prev = GENESIS.to_vec();
    for (i, (prev_hash, hash)) in links.iter().enumerate() {
        assert_eq!(prev_hash, &prev, "row {i} links to the row before it");
        prev = hash.clone();
    }
    let distinct: i64 = sqlx::query_scalar("SELECT count(DISTINCT payload->'n') FROM audit_log")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(distinct, 500, "every change has its own row");
    assert_eq!(first_broken_row(&pool).await, None);
}

// ---- `strad audit verify` ----

/// Runs `strad audit verify` against the test database with nothing else configured, and
/// with the listen address already taken, so a command that tried to serve would fail.
async fn audit_verify(pool: &PgPool, args: &[&str]) -> Output {
    let database: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(pool)
        .await
        .unwrap();
    let mut url = url::Url::parse(
        &std::env::var("DATABASE_URL").expect("DATABASE_URL is set for sqlx::test"),
    )
    .unwrap();
    url.set_path(&database);
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = std::env::temp_dir();
    tokio::task::spawn_blocking({
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        let bind = taken.local_addr().unwrap().to_string();
        move || {
            let output = Command::new(env!("CARGO_BIN_EXE_strad"))
                .args(&args)
                .current_dir(dir)
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("DATABASE_URL", url.as_str())
                .env("STRAD_BIND", bind)
                .env("RUST_LOG", "warn")
                .output()
                .expect("strad runs");
            drop(taken);
            output
        }
    })
    .await
    .unwrap()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[sqlx::test(migrations = false)]
async fn strad_audit_verify_says_intact_and_exits_0_on_a_good_chain(pool: PgPool) {
    migrated(&pool).await;
    five_rows(&pool).await;
    let (id, hash) = head(&pool).await;
    let output = audit_verify(&pool, &["audit", "verify"]).await;
    assert_eq!(
        stdout(&output),
        format!("audit log intact: 5 rows\nhead: row {id}, sha256 {hash}\n")
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[sqlx::test(migrations = false)]
async fn strad_audit_verify_names_the_broken_row_and_exits_1_on_a_tampered_chain(pool: PgPool) {
    migrated(&pool).await;
    allow_tampering(&pool).await;
    let ids = five_rows(&pool).await;
    sqlx::query("UPDATE audit_log SET payload = '{}' WHERE id = $1")
        .bind(ids[3])
        .execute(&pool)
        .await
        .unwrap();
    let (id, hash) = head(&pool).await;
    let output = audit_verify(&pool, &["audit", "verify"]).await;
    assert_eq!(
        stdout(&output),
        format!(
            "audit log broken at row {}\nhead: row {id}, sha256 {hash}\n",
            ids[3]
        )
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
}

#[sqlx::test(migrations = false)]
async fn strad_audit_verify_says_an_empty_log_has_no_head(pool: PgPool) {
    migrated(&pool).await;
    let output = audit_verify(&pool, &["audit", "verify"]).await;
    assert_eq!(
        stdout(&output),
        "audit log intact: 0 rows\nhead: none (the log is empty)\n"
    );
    assert_eq!(output.status.code(), Some(0), "{output:?}");
}

#[sqlx::test(migrations = false)]
async fn the_chain_check_of_the_audit_page_names_the_head(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (id, hash) = head(&app.pool).await;
    let report: Value = server_fn(&app, &admin, "audit/verify", &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(report["first_broken"], Value::Null, "{report}");
    assert_eq!(report["head"], json!({"id": id, "hash": hash}), "{report}");
}

#[sqlx::test(migrations = false)]
async fn strad_with_unknown_arguments_prints_usage_and_exits_2(pool: PgPool) {
    for args in [&["audit"][..], &["audit", "check"], &["--verify"]] {
        let output = audit_verify(&pool, args).await;
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("usage: strad"),
            "{args:?}: {output:?}"
        );
    }
}

// ---- exports ----

const EXPORTS: [&str; 2] = ["/audit/export.csv", "/audit/export.json"];

/// One export of `path` with `query`, as `browser` sees it.
async fn export(
    app: &TestApp,
    browser: &reqwest::Client,
    path: &str,
    query: &[(&str, &str)],
) -> reqwest::Response {
    browser
        .get(app.url(path))
        .query(query)
        .send()
        .await
        .unwrap()
}

/// RFC 4180: rows of fields; quoted fields may hold commas, doubled quotes and line breaks.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => row.push(std::mem::take(&mut field)),
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            (false, c) => field.push(c),
        }
    }
    assert!(!quoted, "the CSV ends inside a quoted field");
    assert!(
        field.is_empty() && row.is_empty(),
        "the CSV ends with a line break"
    );
    rows
}

type TableRow = (
    i64,
    OffsetDateTime,
    Option<Uuid>,
    Option<String>,
    String,
    Option<String>,
    Value,
    Vec<u8>,
    Vec<u8>,
);

async fn table(pool: &PgPool) -> Vec<TableRow> {
    sqlx::query_as("SELECT id, at, actor_id, actor_email, kind, slug, payload, prev_hash, hash FROM audit_log ORDER BY id")
        .fetch_all(pool)
        .await
        .unwrap()
}

fn rfc3339(at: OffsetDateTime) -> String {
    at.format(&Rfc3339).unwrap()
}

/// Rows whose text fields would break a naive CSV or run as spreadsheet formulas.
async fn hostile_rows(pool: &PgPool) {
    let alice = alice();
    append(
        pool,
        &alice,
        "=HYPERLINK(\"http://evil.example\",\"click\")",
        Some("two\nlines, \"quoted\""),
        json!({"note": "a, \"quoted\"\nvalue", "f": "=1+1"}),
    )
    .await;
    append(pool, &alice, "+cmd", Some("-2+3"), json!(-5)).await;
    append(
        pool,
        &Actor::person(Uuid::new_v4(), "@mallory@example.com"),
        "\tpadded",
        Some("github"),
        json!("=SUM(A1)"),
    )
    .await;
}

#[sqlx::test(migrations = false)]
async fn anonymous_callers_get_401_from_both_exports(pool: PgPool) {
    let app = spawn_app(pool).await;
    for path in EXPORTS {
        let response = app.get(path).await;
        assert_eq!(response.status(), 401, "{path}");
        // Authorization comes first: a bad filter does not tell an anonymous caller anything.
        let response = export(&app, &app.client, path, &[("since", "nonsense")]).await;
        assert_eq!(response.status(), 401, "{path}");
    }
}

#[sqlx::test(migrations = false)]
async fn only_auditors_and_admins_may_export(pool: PgPool) {
    let app = spawn_app(pool).await;
    for (held, allowed) in [
        (&[][..], false),
        (&["auditor"][..], true),
        (&["admin"][..], true),
    ] {
        let browser = signed_in_with(&app, held).await;
        for path in EXPORTS {
            let response = export(&app, &browser, path, &[]).await;
            let expected = if allowed { 200 } else { 403 };
            assert_eq!(response.status(), expected, "{path} with {held:?}");
            if !allowed {
                assert!(!response.text().await.unwrap().contains("audit_log"));
            }
        }
        sqlx::query("INSERT INTO user_roles (user_id, role) SELECT id, r FROM users, unnest(ARRAY['admin','auditor']) r ON CONFLICT DO NOTHING")
            .execute(&app.pool)
            .await
            .unwrap();
    }
}

#[sqlx::test(migrations = false)]
async fn an_auditor_gets_csv_rows_that_match_the_table_with_hostile_fields_quoted_and_neutralised(
    pool: PgPool,
) {
    let app = spawn_app(pool).await;
    let auditor = signed_in_with(&app, &["auditor"]).await;
    hostile_rows(&app.pool).await;
    let response = export(&app, &auditor, "/audit/export.csv", &[]).await;
    assert_eq!(response.status(), 200);
    let header = |name: &str| response.headers()[name].to_str().unwrap().to_owned();
    assert_eq!(header("content-type"), "text/csv; charset=utf-8");
    assert_eq!(header("cache-control"), "no-store");
    let today = OffsetDateTime::now_utc().date();
    assert_eq!(
        header("content-disposition"),
        format!("attachment; filename=\"strad-audit-{today}.csv\"")
    );
    let text = response.text().await.unwrap();

    // The raw text: formulas neutralised with a leading apostrophe, then RFC 4180 quoted.
    assert!(text.contains(",\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"click\"\")\",\"two\nlines, \"\"quoted\"\"\","), "{text}");
    assert!(text.contains(",'+cmd,'-2+3,'-5,"), "{text}");
    assert!(
        text.contains(",'@mallory@example.com,'\tpadded,github,\"\"\"=SUM(A1)\"\"\","),
        "{text}"
    );
    assert!(text.starts_with("id,at,actor_email,kind,slug,payload,hash\r\n"));

    let rows = parse_csv(&text);
    assert_eq!(
        rows[0],
        ["id", "at", "actor_email", "kind", "slug", "payload", "hash"]
    );
    let neutral = |s: &str| {
        if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
            format!("'{s}")
        } else {
            s.to_owned()
        }
    };
    let expected: Vec<Vec<String>> = table(&app.pool)
        .await
        .into_iter()
        .map(|(id, at, _, email, kind, slug, payload, _, hash)| {
            vec![
                id.to_string(),
                rfc3339(at),
                neutral(&email.unwrap_or_default()),
                neutral(&kind),
                neutral(&slug.unwrap_or_default()),
                neutral(&serde_json::to_string(&payload).unwrap()),
                hex::encode(hash),
            ]
        })
        .collect();
    assert!(
        expected.len() >= 4,
        "the sign-in and the three hostile rows"
    );
    assert_eq!(rows[1..], expected[..]);
}

#[sqlx::test(migrations = false)]
async fn an_auditor_gets_json_that_is_one_array_of_the_table_rows(pool: PgPool) {
    let app = spawn_app(pool).await;
    let auditor = signed_in_with(&app, &["auditor"]).await;
    hostile_rows(&app.pool).await;
    let response = export(&app, &auditor, "/audit/export.json", &[]).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let today = OffsetDateTime::now_utc().date();
    assert_eq!(
        response.headers()["content-disposition"].to_str().unwrap(),
        format!("attachment; filename=\"strad-audit-{today}.json\"")
    );
    let exported: Vec<Value> = response.json().await.expect("one JSON array");
    let expected: Vec<Value> = table(&app.pool)
        .await
        .into_iter()
        .map(
            |(id, at, actor_id, email, kind, slug, payload, prev_hash, hash)| {
                json!({
                    "id": id,
                    "at": rfc3339(at),
                    "actor_id": actor_id,
                    "actor_email": email,
                    "kind": kind,
                    "slug": slug,
                    "payload": payload,
                    "prev_hash": hex::encode(prev_hash),
                    "hash": hex::encode(hash),
                })
            },
        )
        .collect();
    assert!(expected.len() >= 4);
    assert_eq!(exported, expected);
}

#[sqlx::test(migrations = false)]
async fn an_empty_selection_is_a_header_or_an_empty_array(pool: PgPool) {
    let app = spawn_app(pool).await;
    let auditor = signed_in_with(&app, &["auditor"]).await;
    let query = [("kind", "never_happened")];
    let csv = export(&app, &auditor, "/audit/export.csv", &query)
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(csv, "id,at,actor_email,kind,slug,payload,hash\r\n");
    let json: Value = export(&app, &auditor, "/audit/export.json", &query)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(json, json!([]));
}

async fn exported_ids(
    app: &TestApp,
    browser: &reqwest::Client,
    query: &[(&str, &str)],
) -> Vec<i64> {
    let response = export(app, browser, "/audit/export.json", query).await;
    assert_eq!(response.status(), 200, "{query:?}");
    let json: Vec<Value> = response.json().await.unwrap();
    let ids: Vec<i64> = json.iter().map(|row| row["id"].as_i64().unwrap()).collect();
    let text = export(app, browser, "/audit/export.csv", query)
        .await
        .text()
        .await
        .unwrap();
    let csv_ids: Vec<i64> = parse_csv(&text)[1..]
        .iter()
        .map(|row| row[0].parse().unwrap())
        .collect();
    assert_eq!(
        csv_ids, ids,
        "CSV and JSON select the same rows for {query:?}"
    );
    ids
}

#[sqlx::test(migrations = false)]
async fn filters_by_kind_slug_person_since_and_until_select_the_matching_rows(pool: PgPool) {
    let app = spawn_app(pool).await;
    let auditor = signed_in_with(&app, &["auditor"]).await;
    let bob = Actor::person(Uuid::new_v4(), "Bob@Example.com");
    let pool = &app.pool;
    let a = append(pool, &alice(), "pin", Some("github"), json!({})).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let b = append(pool, &bob, "pin", Some("jira"), json!({})).await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let c = append(pool, &bob, "revocation", Some("github"), json!({})).await;
    let at_of = |id: i64| async move {
        let at: OffsetDateTime = sqlx::query_scalar("SELECT at FROM audit_log WHERE id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap();
        rfc3339(at)
    };
    let (at_b, at_c) = (at_of(b).await, at_of(c).await);

    assert_eq!(
        exported_ids(&app, &auditor, &[("kind", "pin")]).await,
        [a, b]
    );
    assert_eq!(
        exported_ids(&app, &auditor, &[("slug", "github")]).await,
        [a, c]
    );
    assert_eq!(
        exported_ids(&app, &auditor, &[("person", "bob@EXAMPLE.com")]).await,
        [b, c]
    );
    assert_eq!(
        exported_ids(&app, &auditor, &[("person", "bob")]).await,
        [] as [i64; 0],
        "exact, not a substring"
    );
    assert_eq!(
        exported_ids(&app, &auditor, &[("kind", "pin"), ("slug", "github")]).await,
        [a]
    );
    // since is inclusive, until exclusive.
    assert_eq!(
        exported_ids(
            &app,
            &auditor,
            &[("since", &at_b), ("person", "bob@example.com")]
        )
        .await,
        [b, c]
    );
    assert_eq!(
        exported_ids(&app, &auditor, &[("since", &at_b), ("until", &at_c)]).await,
        [b]
    );
    assert_eq!(
        exported_ids(&app, &auditor, &[("slug", "github"), ("until", &at_c)]).await,
        [a]
    );
    // Dates are midnight UTC; an offset is honoured.
    assert_eq!(
        exported_ids(&app, &auditor, &[("since", "1970-01-01"), ("slug", "jira")]).await,
        [b]
    );
    assert_eq!(
        exported_ids(&app, &auditor, &[("until", "2000-01-01")]).await,
        [] as [i64; 0]
    );
    // c's own instant, written at +02:00: read as UTC it would be two hours later and keep c.
    let at_c_plus_2 = OffsetDateTime::parse(&at_c, &Rfc3339)
        .unwrap()
        .to_offset(time::macros::offset!(+2))
        .format(&Rfc3339)
        .unwrap();
    assert!(at_c_plus_2.ends_with("+02:00"));
    assert_eq!(
        exported_ids(
            &app,
            &auditor,
            &[("until", &at_c_plus_2), ("slug", "github")]
        )
        .await,
        [a]
    );
}

#[sqlx::test(migrations = false)]
async fn a_bad_filter_is_a_400_with_a_short_plain_message(pool: PgPool) {
    let app = spawn_app(pool).await;
    let auditor = signed_in_with(&app, &["auditor"]).await;
    for path in EXPORTS {
        let response = export(&app, &auditor, path, &[("since", "last tuesday")]).await;
        assert_eq!(response.status(), 400, "{path}");
        let body = response.text().await.unwrap();
        assert_eq!(
            body,
            "since: expected a date (YYYY-MM-DD) or an RFC 3339 time"
        );
        let response = export(&app, &auditor, path, &[("until", "2024-02-30")]).await;
        assert_eq!(response.status(), 400, "{path}");
        let response = export(&app, &auditor, path, &[("who", "x")]).await;
        assert_eq!(response.status(), 400, "{path}");
    }
}

#[sqlx::test(migrations = false)]
async fn a_large_export_streams_in_several_chunks_without_a_length(pool: PgPool) {
    let app = spawn_app(pool).await;
    let auditor = signed_in_with(&app, &["auditor"]).await;
    let mut tx = app.pool.begin().await.unwrap();
    let filler = "x".repeat(1000);
    for n in 0..1000 {
        let payload = json!({"n": n, "filler": filler});
        writer::append(&mut tx, &alice(), "bulk", None, &payload)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
    for path in EXPORTS {
        let mut response = export(&app, &auditor, path, &[("kind", "bulk")]).await;
        assert_eq!(response.status(), 200);
        assert!(
            response.headers().get("content-length").is_none(),
            "{path} is streamed, so its length is not known up front"
        );
        let (mut chunks, mut bytes) = (0, 0);
        while let Some(chunk) = response.chunk().await.unwrap() {
            chunks += 1;
            bytes += chunk.len();
        }
        assert!(bytes > 1_000_000, "{path}: {bytes} bytes");
        assert!(chunks > 1, "{path} arrived in {chunks} chunk");
    }
}

/// Tool calls' rows arrive together and are written together (`writer::Appender`): each
/// caller gets its own row's id once committed, and the chain holds as if each had been
/// appended alone, interleaved with rows appended alone.
#[sqlx::test(migrations = false)]
async fn rows_appended_together_chain_like_rows_appended_alone(pool: PgPool) {
    migrated(&pool).await;
    let appender = writer::Appender::spawn(pool.clone(), writer::Flush::default());
    let calls = (0..64).map(|n| {
        let appender = appender.clone();
        let pool = pool.clone();
        async move {
            let payload = serde_json::json!({"n": n});
            if n % 8 == 0 {
                let actor = writer::Actor::system();
                writer::append_alone(&pool, &actor, "alone", None, &payload)
                    .await
                    .unwrap()
            } else {
                appender
                    .append(writer::Event {
                        actor: writer::Actor::person(uuid::Uuid::new_v4(), "a@example.com"),
                        kind: "together",
                        slug: Some("s".into()),
                        payload,
                    })
                    .await
                    .unwrap()
            }
        }
    });
    let mut ids = futures::future::join_all(calls).await;
    let stored: Vec<(i64, i64)> =
        sqlx::query_as("SELECT id, (payload->>'n')::bigint FROM audit_log ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(stored.len(), 64);
    for (n, id) in ids.iter().enumerate() {
        assert!(
            stored.contains(&(*id, n as i64)),
            "row {n} is the one its caller was told"
        );
    }
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 64);
    assert_eq!(first_broken_row(&pool).await, None);
}

fn together(n: u32) -> writer::Event {
    writer::Event {
        actor: writer::Actor::system(),
        kind: "together",
        slug: None,
        payload: serde_json::json!({"n": n}),
    }
}

/// Group commit: while tool calls are running, a row waits for theirs, and the rows go in
/// one commit as soon as the last running call has appended (long before the wait is up).
#[sqlx::test(migrations = false)]
async fn a_row_waits_for_the_rows_of_calls_still_running(pool: PgPool) {
    migrated(&pool).await;
    let appender = writer::Appender::spawn_lingering(pool.clone(), Duration::from_secs(60));
    let (first, second) = (appender.running(), appender.running());
    let mut early = tokio::spawn(first.append(together(1)));
    assert!(
        tokio::time::timeout(Duration::from_millis(300), &mut early)
            .await
            .is_err(),
        "the first row waits while another call runs"
    );
    assert_eq!(appender.written_so_far(), (0, 0));
    let late = tokio::time::timeout(Duration::from_secs(20), second.append(together(2)))
        .await
        .expect("the last running call's row ends the wait");
    late.unwrap();
    early.await.unwrap().unwrap();
    assert_eq!(appender.written_so_far(), (1, 2), "one commit, two rows");
    assert_eq!(first_broken_row(&pool).await, None);
}

/// A row with no call running is committed at once, whatever the wait; so is a row whose
/// fellow call ended without a row (refused, failed, cancelled); and a call that runs on
/// and on holds others' rows for the wait at most.
#[sqlx::test(migrations = false)]
async fn a_row_waits_for_nobody_when_no_call_runs(pool: PgPool) {
    migrated(&pool).await;
    let appender = writer::Appender::spawn_lingering(pool.clone(), Duration::from_secs(60));
    let soon = Duration::from_secs(20);
    tokio::time::timeout(soon, appender.append(together(1)))
        .await
        .expect("nothing runs: no wait")
        .unwrap();
    let alone = appender.running();
    tokio::time::timeout(soon, alone.append(together(2)))
        .await
        .expect("the only running call's own row does not wait for itself")
        .unwrap();
    let (gone, own) = (appender.running(), appender.running());
    let pending = tokio::spawn(own.append(together(3)));
    drop(gone);
    tokio::time::timeout(soon, pending)
        .await
        .expect("a call that ended without a row ends the wait")
        .unwrap()
        .unwrap();
    assert_eq!(appender.written_so_far(), (3, 3));

    let short = writer::Appender::spawn_lingering(pool.clone(), Duration::from_millis(200));
    let _runs_on = short.running();
    tokio::time::timeout(soon, short.append(together(4)))
        .await
        .expect("a call that runs on holds others' rows for the wait at most")
        .unwrap();
    assert_eq!(first_broken_row(&pool).await, None);
}

/// Tool calls' rows are committed before their callers are answered, and flushed to disk
/// in the background unless strad is told to wait for the disk (`writer::Flush`): the
/// statement that appends them sets that for its own transaction only.
#[sqlx::test(migrations = false)]
async fn rows_written_together_are_flushed_as_told_in_their_own_transaction(pool: PgPool) {
    migrated(&pool).await;
    let setting = |flush| {
        let pool = pool.clone();
        async move {
            use sqlx::Connection;
            let mut connection = pool.acquire().await.unwrap();
            let show = "SHOW synchronous_commit";
            let mut tx = connection.begin().await.unwrap();
            let before: String = sqlx::query_scalar(show).fetch_one(&mut *tx).await.unwrap();
            let event = together(1);
            writer::append_many(&mut tx, &[&event], flush)
                .await
                .unwrap();
            let during: String = sqlx::query_scalar(show).fetch_one(&mut *tx).await.unwrap();
            tx.commit().await.unwrap();
            let after: String = sqlx::query_scalar(show)
                .fetch_one(&mut *connection)
                .await
                .unwrap();
            (before, during, after)
        }
    };
    let on = || "on".to_string();
    assert_eq!(
        setting(writer::Flush::Background).await,
        (on(), "off".to_string(), on())
    );
    assert_eq!(
        setting(writer::Flush::BeforeAnswer).await,
        (on(), on(), on())
    );
    let appender = writer::Appender::spawn(pool.clone(), writer::Flush::Background);
    let id = appender.append(together(2)).await.unwrap();
    let committed: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE id = $1")
        .bind(id)
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(committed, 1, "the row is committed when its caller is told");
    assert_eq!(first_broken_row(&pool).await, None);
}

/// The writer keeps one connection; when that connection is lost, the row written on it is
/// reported as not appended (its caller answers with an error, never a silent loss), and
/// the next row goes in on a new connection.
#[sqlx::test(migrations = false)]
async fn the_writer_takes_a_new_connection_when_its_own_is_lost(pool: PgPool) {
    migrated(&pool).await;
    let appender = writer::Appender::spawn(pool.clone(), writer::Flush::default());
    appender.append(together(1)).await.unwrap();
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
         WHERE datname = current_database() AND pid <> pg_backend_pid()
           AND query LIKE '%audit_append_many%'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert_eq!(ended, [true], "the writer's one connection was ended");
    assert!(appender.append(together(2)).await.is_err());
    appender.append(together(3)).await.unwrap();
    let rows: Vec<i64> =
        sqlx::query_scalar("SELECT (payload->>'n')::bigint FROM audit_log ORDER BY id")
            .fetch_all(&pool)
            .await
            .unwrap();
    assert_eq!(rows, [1, 3]);
    assert_eq!(first_broken_row(&pool).await, None);
}
