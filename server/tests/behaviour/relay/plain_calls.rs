//! A plain `tools/call` in an initialized session, answered by strad itself as one JSON
//! response with the same checks and audit row as any call.

use super::*;

/// A plain `tools/call` in an initialized session is answered by strad itself, as one JSON
/// response, with the same checks and audit row; every request it cannot answer so goes on
/// to the session as before (an event stream), and what rmcp refuses is still refused.
#[sqlx::test(migrations = false)]
async fn a_plain_call_is_answered_as_json_and_everything_else_by_the_session(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = widgets_and_token(&app, &admin).await;
    let session = session_by_hand(&app, &token, true).await;

    let response = post_mcp(&app, &token, Some(&session), &show_widget(1, "a"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (kind, answer) = answer_to(response, 1).await;
    assert_eq!(kind, "application/json");
    assert!(
        answer["result"].to_string().contains("widget:a"),
        "{answer}"
    );
    // A progress token alone is still plain.
    let mut with_token = show_widget(2, "b");
    with_token["params"]["_meta"] = json!({"progressToken": "p"});
    let response = post_mcp(&app, &token, Some(&session), &with_token);
    let (kind, answer) = answer_to(response.send().await.unwrap(), 2).await;
    assert_eq!(kind, "application/json");
    assert!(
        answer["result"].to_string().contains("widget:b"),
        "{answer}"
    );
    // Refusals answer as through the session: a JSON-RPC error, nothing called.
    let forged = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "hidden__show-widget", "arguments": {}}});
    let response = post_mcp(&app, &token, Some(&session), &forged);
    let (kind, answer) = answer_to(response.send().await.unwrap(), 3).await;
    assert_eq!(kind, "application/json");
    assert!(answer["error"]["message"].is_string(), "{answer}");

    // What needs the session goes to it: other `_meta`, an `Mcp-*` header, a session not
    // yet initialized.
    let mut traced = show_widget(4, "c");
    traced["params"]["_meta"] =
        json!({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"});
    let response = post_mcp(&app, &token, Some(&session), &traced);
    let (kind, answer) = answer_to(response.send().await.unwrap(), 4).await;
    assert_eq!(kind, "text/event-stream");
    assert!(
        answer["result"].to_string().contains("widget:c"),
        "{answer}"
    );
    let response = post_mcp(&app, &token, Some(&session), &show_widget(5, "d"))
        .header("mcp-method", "tools/call")
        .header("mcp-name", "widgets__show-widget");
    let (kind, answer) = answer_to(response.send().await.unwrap(), 5).await;
    assert_eq!(kind, "text/event-stream");
    assert!(
        answer["result"].to_string().contains("widget:d"),
        "{answer}"
    );
    let fresh = session_by_hand(&app, &token, false).await;
    let response = post_mcp(&app, &token, Some(&fresh), &show_widget(6, "e"));
    let (kind, _) = answer_to(response.send().await.unwrap(), 6).await;
    assert_eq!(kind, "text/event-stream");

    // What rmcp refuses stays refused, and calls nothing: another site's Origin, a Host
    // strad is not, a session that is not open, an unknown protocol revision.
    let calls = || async {
        server.state().await.unwrap()["calls"]["show-widget"]
            .as_u64()
            .unwrap_or(0)
    };
    let before = calls().await;
    let refused = [
        post_mcp(&app, &token, Some(&session), &show_widget(7, "x"))
            .header("origin", "https://evil.example")
            .send()
            .await
            .unwrap(),
        post_mcp(&app, &token, Some(&session), &show_widget(7, "x"))
            .header("host", "evil.example")
            .send()
            .await
            .unwrap(),
        post_mcp_accepting(
            &app,
            &token,
            Some(&session),
            &show_widget(7, "x"),
            "application/json",
        )
        .send()
        .await
        .unwrap(),
        post_mcp(&app, &token, Some("no-such-session"), &show_widget(7, "x"))
            .send()
            .await
            .unwrap(),
        reqwest::Client::new()
            .post(app.url("/mcp"))
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "1999-01-01")
            .json(&show_widget(7, "x"))
            .send()
            .await
            .unwrap(),
    ];
    for response in refused {
        assert!(
            response.status().is_client_error(),
            "{:?}",
            response.status()
        );
    }
    assert_eq!(calls().await, before, "nothing refused was called");

    let outcomes = audit_outcomes(&app.pool, "mcp_tool_call").await;
    assert_eq!(outcomes, ["ok", "ok", "ok", "ok", "ok"], "{outcomes:?}");
}

/// A client that goes away in the middle of a call strad answers itself still has the call
/// audited once the server answers.
#[sqlx::test(migrations = false)]
async fn a_call_whose_client_goes_away_is_still_audited(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::with_slow_tool().await;
    register_server(&app, &admin, "widgets", &server.url, true).await;
    grant(&app, &admin, "widgets", LOCAL_ADMIN).await;
    let (token, _) = mint(&app, &admin).await;
    let session = session_by_hand(&app, &token, true).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "widgets__slow", "arguments": {}}});
    let gone = post_mcp(&app, &token, Some(&session), &call)
        .timeout(std::time::Duration::from_millis(200))
        .send()
        .await;
    assert!(gone.is_err(), "the client stopped waiting: {gone:?}");
    let outcomes = eventually(10, "the call's audit row", || async {
        Some(audit_outcomes(&app.pool, "mcp_tool_call").await).filter(|o| !o.is_empty())
    })
    .await;
    assert_eq!(outcomes, ["ok"]);
}
