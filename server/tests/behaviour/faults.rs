//! A server that is down, dies, hangs, answers too much or answers garbage gives a clear
//! error on its page and in the log; strad stays up, other servers are unaffected, and the
//! next healthy request works.

use crate::support::mcp::{TestServer, free_port};
use crate::support::*;
use serde_json::{Value, json};
use sqlx::PgPool;

async fn status(app: &TestApp, admin: &reqwest::Client, slug: &str) -> Value {
    server_detail(app, admin, slug).await["summary"]["status"].clone()
}

async fn still_serving(app: &TestApp) {
    assert_eq!(app.get("/healthz").await.status(), 200);
}

#[sqlx::test(migrations = false)]
async fn a_server_down_at_registration_is_reported_and_others_work(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let closed = format!("http://127.0.0.1:{}/mcp", free_port());
    register_server(&app, &admin, "down", &closed, true).await;
    let status_down = status(&app, &admin, "down").await;
    let failing = status_down["Failing"]
        .as_str()
        .unwrap_or_else(|| panic!("{status_down}"));
    assert!(
        failing.contains("could not connect") && failing.contains("connection refused"),
        "{failing}"
    );
    assert!(!log_lines(&["ERROR", "down", "discovery failed"]).is_empty());

    let healthy = TestServer::start().await;
    register_server(&app, &admin, "healthy", &healthy.url, true).await;
    assert_eq!(status(&app, &admin, "healthy").await, "Ok");
    still_serving(&app).await;

    // The page shows the failure too.
    let page = page(&app, &admin, "/admin/servers/down").await;
    assert!(
        page.contains("failing: could not connect"),
        "the server page says why: {page}"
    );
}

#[sqlx::test(migrations = false)]
async fn a_server_that_dies_is_reached_again_after_it_restarts(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let port = free_port();
    let mut server = TestServer::start_on(port).await;
    register_server(&app, &admin, "phoenix", &server.url, true).await;
    assert_eq!(status(&app, &admin, "phoenix").await, "Ok");

    server
        .control(json!({"fault": {"kind": "die", "on": "tools/list"}}))
        .await;
    let outcome = refresh_server(&app, &admin, "phoenix").await;
    assert!(
        outcome["error"]
            .as_str()
            .is_some_and(|e| e.contains("connection failed")
                || e.contains("could not connect")
                || e.contains("closed the connection")),
        "{outcome}"
    );
    server.wait_exit().await;
    still_serving(&app).await;

    // Same port, new process: the next discovery reconnects by itself.
    let _restarted = TestServer::start_on(port).await;
    let outcome = refresh_server(&app, &admin, "phoenix").await;
    assert_eq!(outcome["error"], Value::Null, "{outcome}");
    assert_eq!(status(&app, &admin, "phoenix").await, "Ok");
}

#[sqlx::test(migrations = false)]
async fn a_hanging_server_times_out_and_then_works(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_TIMEOUT_SECONDS", "1")]).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin, "sloth", &server.url, true).await;

    server
        .control(json!({"fault": {"kind": "hang", "on": "tools/list"}}))
        .await;
    let started = std::time::Instant::now();
    let outcome = refresh_server(&app, &admin, "sloth").await;
    assert!(
        outcome["error"]
            .as_str()
            .is_some_and(|e| e.contains("no answer within 1s")),
        "{outcome}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "bounded by the timeout"
    );
    assert!(status(&app, &admin, "sloth").await["Failing"].is_string());
    still_serving(&app).await;

    server.control(json!({"fault": null})).await;
    let outcome = refresh_server(&app, &admin, "sloth").await;
    assert_eq!(outcome["error"], Value::Null, "{outcome}");
}

#[sqlx::test(migrations = false)]
async fn a_resource_over_the_byte_limit_is_a_problem_of_that_resource(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    server
        .control(json!({"fault": {"kind": "huge", "on": "resources/read"}}))
        .await;
    register_server(&app, &admin, "bloat", &server.url, true).await;
    let response = server_fn(&app, &admin, "servers/get", &[("slug", "bloat")]).await;
    let detail: Value = response.json().await.unwrap();
    assert_eq!(
        detail["summary"]["status"], "Ok",
        "the server itself is fine"
    );
    let problems = detail["problems"].to_string();
    assert!(
        problems.contains("resource ui://test/widget.html") && problems.contains("limit"),
        "{problems}"
    );
    assert!(detail["tools"].as_array().unwrap().len() >= 4);

    server.control(json!({"fault": null})).await;
    refresh_server(&app, &admin, "bloat").await;
    let detail: Value = server_fn(&app, &admin, "servers/get", &[("slug", "bloat")])
        .await
        .json()
        .await
        .unwrap();
    assert!(
        detail["apps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["uri"] == "ui://test/widget.html")
    );
}

#[sqlx::test(migrations = false)]
async fn malformed_json_is_an_error_and_the_next_healthy_answer_works(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin, "garbled", &server.url, true).await;

    server
        .control(json!({"fault": {"kind": "garbage", "on": "tools/list"}}))
        .await;
    let outcome = refresh_server(&app, &admin, "garbled").await;
    let error = outcome["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{outcome}"));
    assert!(
        error.contains("connection failed") || error.contains("malformed"),
        "{error}"
    );
    still_serving(&app).await;

    server.control(json!({"fault": null})).await;
    let outcome = refresh_server(&app, &admin, "garbled").await;
    assert_eq!(outcome["error"], Value::Null, "{outcome}");
    assert_eq!(status(&app, &admin, "garbled").await, "Ok");
}
