//! Progress notifications come back to the caller, and a cancelled call is cancelled upstream,
//! through rmcp's session and through a call strad answers itself.

use super::*;

/// A client that keeps the progress notifications it receives.
#[derive(Clone)]
struct Progress(tokio::sync::mpsc::UnboundedSender<rmcp::model::ProgressNotificationParam>);

impl rmcp::ClientHandler for Progress {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(params);
    }
}

/// The test server registered as `slow` (tools approved) and granted to the admin, with
/// read-only tools `count` (`steps` progress notifications, then its answer) and `wait`
/// (the same, then waits to be cancelled), and a login token of the admin's.
async fn slow_server_and_token(
    app: &TestApp,
    admin: &reqwest::Client,
    steps: u32,
) -> (TestServer, String) {
    let server = TestServer::start().await;
    for (name, wait) in [("count", false), ("wait", true)] {
        server
            .control(
                json!({"addTool": {"name": name, "annotations": {"readOnlyHint": true},
                "progress": {"steps": steps, "wait": wait}}}),
            )
            .await;
    }
    register_server(app, admin, "slow", &server.url, false).await;
    grant(app, admin, "slow", LOCAL_ADMIN).await;
    let (token, _) = mint(app, admin).await;
    (server, token)
}

/// Waits until the server has seen one call of `wait` cancelled.
async fn cancelled_upstream_once(server: &TestServer) {
    eventually(10, "the server to see the cancellation", || async {
        server
            .state()
            .await
            .and_then(|s| s["cancelled"]["wait"].as_u64())
            .filter(|n| *n == 1)
    })
    .await;
}

#[sqlx::test(migrations = false)]
async fn progress_comes_back_and_a_cancelled_call_is_cancelled_upstream(pool: PgPool) {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = slow_server_and_token(&app, &admin, 3).await;
    let (sender, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let config = StreamableHttpClientTransportConfig::with_uri(app.url("/mcp")).auth_header(token);
    let mcp = Progress(sender)
        .serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("initialize");
    let call = |name: &str| {
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(
            name.to_owned(),
        )))
    };

    // Each step reaches the client under the token the client chose.
    let handle = mcp
        .send_request_with_option(call("slow__count"), PeerRequestOptions::no_options())
        .await
        .unwrap();
    let mine = handle.progress_token.clone();
    let answer = handle.await_response().await.unwrap();
    assert!(format!("{answer:?}").contains("count:"), "{answer:?}");
    for step in 1..=3 {
        let notification: rmcp::model::ProgressNotificationParam = next(&mut progress).await;
        assert_eq!(notification.progress_token, mine);
        assert_eq!(notification.progress, f64::from(step));
        assert_eq!(notification.total, Some(3.0));
    }

    // Cancelling a call strad relays cancels it upstream, and the audit says so.
    let handle = mcp
        .send_request_with_option(call("slow__wait"), PeerRequestOptions::no_options())
        .await
        .unwrap();
    for _ in 1..=3 {
        next(&mut progress).await;
    }
    assert_eq!(
        server.state().await.unwrap()["cancelled"]["wait"],
        Value::Null
    );
    handle.cancel(Some("enough".into())).await.unwrap();
    cancelled_upstream_once(&server).await;
    let outcomes = audit_outcomes(&app.pool, "mcp_tool_call").await;
    assert_eq!(outcomes, ["ok", "cancelled"]);
    let _ = mcp.cancel().await;
}

/// Progress of a call strad answers itself comes as an event stream (no priming event: that
/// is rmcp's session worker), under the caller's token, then the answer; a cancellation
/// naming it ends it upstream and ends the stream with no answer.
#[sqlx::test(migrations = false)]
async fn progress_and_cancellation_of_a_call_strad_answers_itself(pool: PgPool) {
    use futures::StreamExt;
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = slow_server_and_token(&app, &admin, 2).await;
    let session = session_by_hand(&app, &token, true).await;
    let call = |id: i64, name: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": {}, "_meta": {"progressToken": "mine"}}})
    };

    let response = post_mcp(&app, &token, Some(&session), &call(1, "slow__count"));
    let response = response.send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let body = response.text().await.unwrap();
    assert!(!body.contains("retry:"), "{body}");
    let messages: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(messages.len(), 3, "{body}");
    for (step, message) in messages[..2].iter().enumerate() {
        assert_eq!(message["method"], "notifications/progress");
        assert_eq!(message["params"]["progressToken"], "mine");
        assert_eq!(
            message["params"]["progress"].as_f64(),
            Some(step as f64 + 1.0)
        );
    }
    assert_eq!(messages[2]["id"], 1);
    assert!(messages[2]["result"].to_string().contains("count:"));

    let response = post_mcp(&app, &token, Some(&session), &call(2, "slow__wait"));
    let response = response.send().await.unwrap();
    assert!(!response.headers().contains_key("mcp-session-id"));
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    while seen.matches("notifications/progress").count() < 2 {
        let chunk = stream
            .next()
            .await
            .expect("progress before the end")
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "enough"}});
    let response = post_mcp(&app, &token, Some(&session), &cancel);
    assert_eq!(response.send().await.unwrap().status(), 202);
    while let Some(chunk) = stream.next().await {
        seen.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    assert!(
        !seen.contains("\"id\":2"),
        "no answer to a cancelled call: {seen}"
    );
    cancelled_upstream_once(&server).await;
    let outcomes = audit_outcomes(&app.pool, "mcp_tool_call").await;
    assert_eq!(outcomes, ["ok", "cancelled"]);
}
