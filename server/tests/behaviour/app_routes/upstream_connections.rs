//! strad's connections to a server: kept between calls, and not used again once idle past
//! the time a server keeps them.

use super::*;

/// The TCP connections the test server's `/mcp` requests have come on so far.
async fn mcp_connections(server: &TestServer) -> u64 {
    server.state().await.unwrap()["mcpConnections"]
        .as_u64()
        .unwrap()
}

/// strad keeps its connection to a server between calls: twenty calls one after another
/// travel on the connections already open, where a client without a pool (rmcp's default)
/// opens one per call.
#[sqlx::test(migrations = false)]
async fn calls_to_a_server_reuse_its_connection(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let warm = call(
        &app,
        &admin,
        "widget",
        json!({"name": "show-widget", "arguments": {}}),
    )
    .await;
    assert_eq!(warm.status(), 200);
    let before = mcp_connections(&server).await;
    for n in 0..20 {
        let label = format!("call {n}");
        let response = call(
            &app,
            &admin,
            "widget",
            json!({"name": "show-widget", "arguments": {"label": label}}),
        )
        .await;
        assert_eq!(response.status(), 200);
    }
    assert_eq!(calls_of(&server, "show-widget").await, 21);
    let opened = mcp_connections(&server).await - before;
    assert!(opened <= 2, "20 calls opened {opened} new connections");
}

/// A connection idle longer than strad keeps one is not used again: servers close theirs after
/// a few idle seconds (Node and uvicorn: 5 s), and a call sent on a connection as it closes is
/// lost. The wait is the point of the test: the idle time is what is tested.
#[sqlx::test(migrations = false)]
async fn a_connection_idle_past_its_time_is_not_used_again(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let body = || json!({"name": "show-widget", "arguments": {}});
    assert_eq!(call(&app, &admin, "widget", body()).await.status(), 200);
    let before = mcp_connections(&server).await;
    tokio::time::sleep(app::servers::ssr::http::IDLE_FOR + Duration::from_millis(500)).await;
    assert_eq!(call(&app, &admin, "widget", body()).await.status(), 200);
    let opened = mcp_connections(&server).await - before;
    assert!(
        opened >= 1,
        "the call after the idle time came on the old connection"
    );
}
