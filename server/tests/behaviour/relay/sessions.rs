//! Client sessions: each with its own upstream session, answering only its opener's token,
//! of the session revisions only, and calls in them kept apart.

use super::*;

#[sqlx::test(migrations = false)]
async fn a_hanging_server_does_not_hold_up_another(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_TIMEOUT_SECONDS", "5")]).await;
    let admin = signed_in_admin(&app).await;
    let slow = TestServer::start().await;
    let fast = TestServer::start().await;
    register_server(&app, &admin, "slow", &slow.url, true).await;
    register_server(&app, &admin, "fast", &fast.url, true).await;
    grant(&app, &admin, "slow", LOCAL_ADMIN).await;
    grant(&app, &admin, "fast", LOCAL_ADMIN).await;
    slow.control(json!({"fault": {"kind": "hang", "on": "tools/call"}}))
        .await;
    let (token, _) = mint(&app, &admin).await;
    let stuck = client(&app.url("/mcp"), &token).await.unwrap();
    let hanging = tokio::spawn(async move {
        stuck
            .call_tool(CallToolRequestParams::new("slow__show-widget"))
            .await
            .map(|r| serde_json::to_value(r).unwrap())
    });
    // Another session, another server: answered at once while the first call hangs.
    let other = client(&app.url("/mcp"), &token).await.unwrap();
    let started = std::time::Instant::now();
    let answer = other
        .call_tool(CallToolRequestParams::new("fast__show-widget"))
        .await
        .unwrap();
    assert!(
        serde_json::to_value(&answer)
            .unwrap()
            .to_string()
            .contains("widget:")
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(!hanging.is_finished(), "the slow call is still waiting");
    // The hanging call ends with the timeout, as an error result the client can read.
    let ended = tokio::time::timeout(std::time::Duration::from_secs(20), hanging)
        .await
        .expect("the timeout ends it")
        .unwrap()
        .unwrap();
    assert_eq!(ended["isError"], true, "{ended}");
    let _ = other.cancel().await;
}

/// The upstream sessions the test server has open.
async fn upstream_sessions(server: &TestServer) -> Vec<String> {
    server.state().await.unwrap()["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

#[sqlx::test(migrations = false)]
async fn each_client_session_has_its_own_upstream_session_closed_with_it(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = widgets_and_token(&app, &admin).await;
    // The console's own session (discovery) is there from registration.
    let console = upstream_sessions(&server).await;
    assert_eq!(console.len(), 1, "{console:?}");

    let first = client(&app.url("/mcp"), &token).await.unwrap();
    let second = client(&app.url("/mcp"), &token).await.unwrap();
    for mcp in [&first, &second] {
        mcp.call_tool(CallToolRequestParams::new("widgets__show-widget"))
            .await
            .unwrap();
    }
    let open = upstream_sessions(&server).await;
    assert_eq!(open.len(), 3, "one each, besides the console's: {open:?}");

    // A client that ends its session ends its upstream one, and only that.
    let _ = first.cancel().await;
    let remaining = eventually(
        10,
        "the first client's upstream session to close",
        || async {
            let now = upstream_sessions(&server).await;
            (now.len() == 2).then_some(now)
        },
    )
    .await;
    assert!(remaining.contains(&console[0]), "{remaining:?}");
    second
        .call_tool(CallToolRequestParams::new("widgets__show-widget"))
        .await
        .expect("the other client goes on");
    let _ = second.cancel().await;
}

/// A client of both revisions (rmcp's `Auto` lifecycle) asks `server/discover` first; strad
/// answers as a server of the session revisions does, and the client falls back to
/// `initialize` and gets a session, its calls counted once against the token's sessions.
#[sqlx::test(migrations = false)]
async fn a_client_that_asks_for_the_stateless_revision_falls_back_to_a_session(pool: PgPool) {
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    // Three new sessions a minute: a client that opened one per request would be refused.
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_SESSIONS_PER_MINUTE", "3")]).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = widgets_and_token(&app, &admin).await;
    let url = app.url("/mcp");

    let mcp = ()
        .serve_with_lifecycle(
            transport(&url, &token),
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
        )
        .await
        .expect("a session after discover is not found");
    let negotiated = mcp.peer_info().map(|info| info.protocol_version.clone());
    assert_eq!(negotiated, Some(ProtocolVersion::V_2025_11_25));
    for n in 0..10 {
        let tools = mcp
            .list_all_tools()
            .await
            .unwrap_or_else(|e| panic!("list {n}: {e}"));
        assert!(tools.iter().any(|t| t.name == "widgets__show-widget"));
        mcp.call_tool(CallToolRequestParams::new("widgets__show-widget"))
            .await
            .unwrap_or_else(|e| panic!("call {n}: {e}"));
    }
    // One upstream session for this client, besides the console's.
    assert_eq!(upstream_sessions(&server).await.len(), 2);
    let _ = mcp.cancel().await;

    // A client of the stateless revision only is told so when it connects.
    let refused = ()
        .serve_with_lifecycle(
            transport(&url, &token),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await;
    let error = refused.expect_err("discover must not succeed").to_string();
    assert!(
        !error.contains("429"),
        "refused for its revision, not its rate: {error}"
    );
}

/// A request of the stateless revision sent without `server/discover` (its protocol version
/// in its own `_meta`, no session) is refused with a clear error, and nothing is called.
#[sqlx::test(migrations = false)]
async fn a_stateless_request_is_refused_and_calls_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = widgets_and_token(&app, &admin).await;
    let calls_before = server.state().await.unwrap()["calls"].clone();
    let response = reqwest::Client::new()
        .post(app.url("/mcp"))
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "widgets__show-widget")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": "widgets__show-widget", "arguments": {},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {}
                }
            }
        }))
        .send()
        .await
        .unwrap();
    let body = response.text().await.unwrap();
    assert!(
        body.contains("strad's /mcp serves MCP sessions"),
        "the refusal says why: {body}"
    );
    let calls_after = server.state().await.unwrap()["calls"].clone();
    assert_eq!(calls_after, calls_before, "nothing called upstream");
}

/// A client session is its opener's: another token naming it (even the same person's) is
/// answered as for an unknown session, can neither call in it nor end it.
#[sqlx::test(migrations = false)]
async fn a_session_answers_only_the_token_that_opened_it(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = widgets_and_token(&app, &admin).await;
    let (other, _) = mint(&app, &admin).await;
    let session = session_by_hand(&app, &token, true).await;
    let refused = post_mcp(&app, &other, Some(&session), &show_widget(1, "x"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 404);
    let ended = reqwest::Client::new()
        .delete(app.url("/mcp"))
        .bearer_auth(&other)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 404);
    assert_eq!(
        server.state().await.unwrap()["calls"]["show-widget"],
        Value::Null
    );
    let response = post_mcp(&app, &token, Some(&session), &show_widget(2, "y"));
    let (_, answer) = answer_to(response.send().await.unwrap(), 2).await;
    assert!(
        answer["result"].to_string().contains("widget:y"),
        "{answer}"
    );
}

/// A client ending its session (DELETE) hears 200, as the SDKs' own servers answer it, and
/// the session is gone: naming it again is a 404.
#[sqlx::test(migrations = false)]
async fn a_client_ending_its_session_hears_200_and_the_session_is_gone(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (_server, token) = widgets_and_token(&app, &admin).await;
    let session = session_by_hand(&app, &token, true).await;
    let ended = reqwest::Client::new()
        .delete(app.url("/mcp"))
        .bearer_auth(&token)
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    let after = post_mcp(&app, &token, Some(&session), &show_widget(1, "x"))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 404);
}

/// A request that reuses the id of one still in flight in its session is answered at once
/// with an error, whatever its method; the first call still gets its answer, and once it has,
/// the id may be used again.
#[sqlx::test(migrations = false)]
async fn a_request_reusing_an_id_in_flight_is_refused_at_once(pool: PgPool) {
    use futures::StreamExt;
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    server
        .control(
            json!({"addTool": {"name": "slow", "annotations": {"readOnlyHint": true},
            "progress": {"steps": 2, "intervalMs": 1000}}}),
        )
        .await;
    register_server(&app, &admin, "widgets", &server.url, true).await;
    grant(&app, &admin, "widgets", LOCAL_ADMIN).await;
    let (token, _) = mint(&app, &admin).await;
    let session = session_by_hand(&app, &token, true).await;
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "widgets__slow", "arguments": {}}});
    let mut calls: futures::stream::FuturesUnordered<_> = (0..4)
        .map(|_| async {
            let response = post_mcp(&app, &token, Some(&session), &call);
            answer_to(response.send().await.unwrap(), 1).await.1
        })
        .collect();
    let mut answers = Vec::new();
    while let Some(answer) = tokio::time::timeout(std::time::Duration::from_secs(15), calls.next())
        .await
        .expect("every request is answered within 15 s")
    {
        answers.push(answer);
    }
    let (ran, refused): (Vec<&Value>, Vec<&Value>) =
        answers.iter().partition(|a| a.get("result").is_some());
    assert_eq!(ran.len(), 1, "{answers:?}");
    assert!(ran[0]["result"].to_string().contains("slow"), "{answers:?}");
    assert_eq!(refused.len(), 3, "{answers:?}");
    for answer in refused {
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("already in flight"),
            "{answer}"
        );
    }
    assert!(
        answers[3].get("result").is_some(),
        "the duplicates are answered while the first still runs: {answers:?}"
    );
    assert_eq!(server.state().await.unwrap()["calls"]["slow"], 1);
    // The id is free again, and the session goes on.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let response = post_mcp(&app, &token, Some(&session), &list);
    let (_, answer) = tokio::time::timeout(
        std::time::Duration::from_secs(15),
        answer_to(response.send().await.unwrap(), 1),
    )
    .await
    .expect("tools/list is answered");
    assert!(
        answer["result"].to_string().contains("widgets__slow"),
        "{answer}"
    );
}

/// A stdio server runs as at most `STRAD_STDIO_CHILDREN_MAX` processes, the console's
/// included, however many client sessions call it at once; every call is answered.
#[sqlx::test(migrations = false)]
async fn client_sessions_share_a_stdio_servers_few_processes(pool: PgPool) {
    let spawns = std::env::temp_dir().join(format!("strad-stdio-{}.pids", uuid::Uuid::new_v4()));
    let file = format!(
        "[[servers]]\nslug = \"clock\"\ncommand = [\"sh\", \"-c\", \"echo $$ >> {}; exec {} --stdio\"]\ncapabilities = [\"tools\"]\n",
        spawns.display(),
        crate::support::mcp::npm_bin("mcp-server-basic-vanillajs"),
    );
    let app = spawn_app_with_file(pool, &file, &[("STRAD_STDIO_CHILDREN_MAX", "2")]).await;
    let admin = signed_in_admin(&app).await;
    eventually(60, "the stdio server's discovery", || async {
        let detail = server_detail(&app, &admin, "clock").await;
        (detail["summary"]["status"] == "Ok").then_some(())
    })
    .await;
    grant(&app, &admin, "clock", LOCAL_ADMIN).await;
    let (token, _) = mint(&app, &admin).await;
    let url = app.url("/mcp");
    let sessions = futures::future::join_all((0..6).map(|_| async {
        let mcp = client(&url, &token).await.expect("initialize");
        let result = mcp
            .call_tool(CallToolRequestParams::new("clock__get-time"))
            .await
            .expect("the call is answered");
        let result = serde_json::to_value(result).unwrap();
        assert!(result["structuredContent"]["time"].is_string(), "{result}");
        mcp
    }))
    .await;
    let started = std::fs::read_to_string(&spawns).unwrap_or_default();
    let _ = std::fs::remove_file(&spawns);
    assert!(
        (1..=2).contains(&started.lines().count()),
        "processes started: {started:?}"
    );
    for mcp in sessions {
        let _ = mcp.cancel().await;
    }
}
