//! Auditors export the log as CSV or JSON: the table's rows, filtered, hostile fields
//! neutralised, streamed; nobody else may.

use super::*;

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
        append_row(&mut tx, &alice(), "bulk", None, &payload).await;
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
