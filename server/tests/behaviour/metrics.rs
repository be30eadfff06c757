//! `/metrics` (SPEC §13): Prometheus text to a loopback peer with no forwarding header or to
//! the configured bearer token, a 404 to anyone else; counts of what strad did, with no
//! person in any label.

use serde_json::json;
use sqlx::PgPool;

use crate::support::mcp::TestServer;
use crate::support::*;

const TOKEN: &str = "metrics-token-0123456789abcdef-0123";

async fn scrape(app: &TestApp, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = app.client.get(app.url("/metrics"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

/// The value of the sample whose line starts with `series` (name and labels as rendered).
fn sample(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

#[sqlx::test(migrations = false)]
async fn a_loopback_scrape_gets_request_counts_and_the_processs_memory(pool: PgPool) {
    let app = spawn_app(pool).await;
    assert_eq!(app.get("/healthz").await.status(), 200);
    let response = scrape(&app, &[]).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers().get("set-cookie").is_none());
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let body = response.text().await.unwrap();
    let healthz = r#"strad_http_requests_total{route="/healthz",method="GET",status="2xx"}"#;
    assert!(sample(&body, healthz).is_some_and(|n| n >= 1.0), "{body}");
    assert!(body.contains("strad_http_request_duration_seconds_bucket{"));
    let resident = sample(&body, "strad_process_resident_memory_bytes");
    assert!(resident.is_some_and(|bytes| bytes > 1e6), "{body}");
    assert!(sample(&body, "strad_process_virtual_memory_bytes").is_some());
    assert!(sample(&body, "strad_db_pool_size").is_some_and(|n| n >= 1.0));
    assert!(sample(&body, "strad_audit_last_row_id").is_some());
}

#[sqlx::test(migrations = false)]
async fn a_forwarded_request_is_answered_404_even_from_loopback(pool: PgPool) {
    let app = spawn_app(pool).await;
    for (name, value) in [
        ("x-forwarded-for", "203.0.113.9"),
        ("forwarded", "for=203.0.113.9"),
        ("x-real-ip", "203.0.113.9"),
    ] {
        let response = scrape(&app, &[(name, value)]).await;
        assert_eq!(response.status(), 404, "{name}");
        assert!(response.headers().get("set-cookie").is_none());
        let body = response.text().await.unwrap();
        assert!(!body.contains("strad_"), "{name}: {body}");
    }
}

#[sqlx::test(migrations = false)]
async fn only_the_configured_token_opens_a_forwarded_request(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_METRICS_TOKEN", TOKEN)]).await;
    let forwarded = ("x-forwarded-for", "203.0.113.9");
    let wrong = format!("Bearer {TOKEN}x");
    let response = scrape(&app, &[forwarded, ("authorization", &wrong)]).await;
    assert_eq!(response.status(), 404);
    let right = format!("Bearer {TOKEN}");
    let response = scrape(&app, &[forwarded, ("authorization", &right)]).await;
    assert_eq!(response.status(), 200);
    assert!(
        response
            .text()
            .await
            .unwrap()
            .contains("strad_http_requests_total")
    );
}

#[sqlx::test(migrations = false)]
async fn an_app_tool_call_is_counted_by_slug_surface_and_outcome_with_no_person_in_a_label(
    pool: PgPool,
) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    // A slug of this test's own: the recorder is the process's, shared by every test.
    register_server(&app, &admin, "metered", &server.url, true).await;
    grant(&app, &admin, "metered", LOCAL_ADMIN).await;
    let call = json!({"name": "show-widget", "arguments": {"label": "hi"}});
    let response = post_from_console(&app, &admin, "/apps/metered/tools/call", call).await;
    assert_eq!(response.status(), 200);
    let body = scrape(&app, &[]).await.text().await.unwrap();
    let counted = r#"strad_tool_calls_total{slug="metered",surface="app",outcome="ok"}"#;
    assert_eq!(sample(&body, counted), Some(1.0), "{body}");
    let upstream =
        r#"strad_upstream_request_duration_seconds_count{slug="metered",method="tools/call"}"#;
    assert_eq!(sample(&body, upstream), Some(1.0), "{body}");
    assert!(sample(&body, "strad_audit_rows_written_total").is_some_and(|n| n >= 1.0));
    let route =
        r#"strad_http_requests_total{route="/apps/{slug}/tools/call",method="POST",status="2xx"}"#;
    assert!(sample(&body, route).is_some(), "{body}");

    let person: uuid::Uuid = sqlx::query_scalar("SELECT id FROM users WHERE email = $1")
        .bind(LOCAL_ADMIN)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(!body.contains(LOCAL_ADMIN), "an email in a label");
    assert!(
        !body.contains(&person.to_string()),
        "a person's id in a label"
    );
    assert!(
        !body.contains("/apps/metered"),
        "a requested path in a label"
    );
}
