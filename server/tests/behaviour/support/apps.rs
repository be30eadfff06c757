//! An MCP server with an app, registered and granted, and the requests a console page
//! makes of it.

use serde_json::Value;
use sqlx::PgPool;

use super::mcp::TestServer;
use super::{TestApp, register_server, server_fn, signed_in_admin, spawn_app};

/// Local mode's admin, as the console names them in grants.
pub const LOCAL_ADMIN: &str = "admin@localhost";

/// Grants `slug` to `grantee`; the grant must succeed.
pub async fn grant(app: &TestApp, admin: &reqwest::Client, slug: &str, grantee: &str) {
    let granted = server_fn(
        app,
        admin,
        "entitlements/grant",
        &[("slug", slug), ("grantee", grantee)],
    )
    .await;
    assert_eq!(granted.status(), 200);
}

/// The test MCP server registered as `widget` (tools and apps approved) and granted to the
/// local admin.
pub async fn widget_granted_to_admin(app: &TestApp, admin: &reqwest::Client) -> TestServer {
    let server = TestServer::start().await;
    register_server(app, admin, "widget", &server.url, true).await;
    grant(app, admin, "widget", LOCAL_ADMIN).await;
    server
}

/// strad in local mode with the test MCP server registered as `widget` (tools and apps
/// approved) and granted to the local admin; the admin's browser.
pub async fn spawn_app_with_widget(pool: PgPool) -> (TestApp, reqwest::Client, TestServer) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = widget_granted_to_admin(&app, &admin).await;
    (app, admin, server)
}

/// POSTs JSON to a console route as the console's own page does.
pub async fn post_from_console(
    app: &TestApp,
    browser: &reqwest::Client,
    path: &str,
    body: Value,
) -> reqwest::Response {
    browser
        .post(app.url(path))
        .header("origin", &app.base)
        .header("sec-fetch-site", "same-origin")
        .json(&body)
        .send()
        .await
        .unwrap()
}

/// How many times the test server has been called with `tool`.
pub async fn calls_of(server: &TestServer, tool: &str) -> u64 {
    server.state().await.unwrap()["calls"][tool]
        .as_u64()
        .unwrap_or(0)
}
