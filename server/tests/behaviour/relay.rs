//! `/mcp`: an MCP client (rmcp's, over Streamable HTTP) with a person's login token sees
//! the tools and app resources they are entitled to, namespaced per server, calls them, reads
//! the same bytes strad pins; and everything else is refused.

use crate::support::mcp::{ExampleServer, TestServer};
use crate::support::*;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use sqlx::PgPool;

async fn mint(app: &TestApp, browser: &reqwest::Client) -> (String, String) {
    let minted: Value = server_fn(
        app,
        browser,
        "tokens/mint",
        &[("name", "client"), ("days", "1")],
    )
    .await
    .json()
    .await
    .unwrap();
    (
        minted["secret"].as_str().unwrap().to_owned(),
        minted["token"]["id"].as_str().unwrap().to_owned(),
    )
}

/// rmcp's own Streamable HTTP client transport to `url`, `token` as its Bearer.
fn transport(url: &str, token: &str) -> impl rmcp::transport::Transport<rmcp::RoleClient> + use<> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    StreamableHttpClientTransport::from_config(config)
}

async fn client(
    url: &str,
    token: &str,
) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>, String> {
    ().serve(transport(url, token))
        .await
        .map_err(|e| e.to_string())
}

/// The test server registered as `widgets` and granted to the admin, and a login token of
/// theirs.
async fn widgets_and_token(app: &TestApp, admin: &reqwest::Client) -> (TestServer, String) {
    let server = TestServer::start().await;
    register_server(app, admin, "widgets", &server.url, true).await;
    grant(app, admin, "widgets").await;
    let (token, _) = mint(app, admin).await;
    (server, token)
}

async fn grant(app: &TestApp, admin: &reqwest::Client, slug: &str) {
    let response = server_fn(
        app,
        admin,
        "entitlements/grant",
        &[("slug", slug), ("grantee", "admin@localhost")],
    )
    .await;
    assert_eq!(response.status(), 200);
}

#[sqlx::test(migrations = false)]
async fn an_mcp_client_sees_calls_and_reads_what_the_person_may(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let clock = ExampleServer::start("mcp-server-basic-vanillajs").await;
    let widgets = TestServer::start().await;
    register_server(&app, &admin, "clock", &clock.url, true).await;
    register_server(&app, &admin, "widgets", &widgets.url, true).await;
    register_server(&app, &admin, "hidden", &widgets.url, true).await;
    grant(&app, &admin, "clock").await;
    grant(&app, &admin, "widgets").await;
    let (token, _) = mint(&app, &admin).await;

    let mcp = client(&app.url("/mcp"), &token).await.expect("initialize");
    let tools = mcp.list_all_tools().await.unwrap();
    let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
    assert!(names.contains(&"clock__get-time".to_string()), "{names:?}");
    assert!(
        names.contains(&"widgets__show-widget".to_string()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.starts_with("hidden__")),
        "not entitled: {names:?}"
    );
    assert!(
        !names.contains(&"widgets__app-only-refresh".to_string()),
        "app-only: {names:?}"
    );
    let widget = tools
        .iter()
        .find(|t| t.name == "widgets__show-widget")
        .unwrap();
    let meta = serde_json::to_value(&widget.meta).unwrap();
    assert_eq!(meta["ui"]["resourceUri"], "ui://widgets/test/widget.html");

    // A call, mapped back onto the right server, audited as an MCP client's.
    let result = mcp
        .call_tool(
            CallToolRequestParams::new("widgets__show-widget")
                .with_arguments(json!({"label": "x"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    let result = serde_json::to_value(&result).unwrap();
    assert!(result.to_string().contains("widget:x"), "{result}");
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'mcp_tool_call'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(audited, 1);

    // The app resource: the same bytes the console pins.
    let resources = mcp.list_all_resources().await.unwrap();
    let uris: Vec<String> = resources.iter().map(|r| r.uri.to_string()).collect();
    assert!(
        uris.contains(&"ui://widgets/test/widget.html".to_string()),
        "{uris:?}"
    );
    let read = mcp
        .read_resource(ReadResourceRequestParams::new(
            "ui://widgets/test/widget.html",
        ))
        .await
        .unwrap();
    let read = serde_json::to_value(&read).unwrap();
    let text = read["contents"][0]["text"].as_str().unwrap().to_owned();
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widgets")])
        .await
        .json()
        .await
        .unwrap();
    let digest = app::servers::ssr::canonical::sha256_hex(text.as_bytes());
    assert_eq!(
        view["digest"], digest,
        "the relayed bytes are the pinned bytes"
    );
    assert_eq!(read["contents"][0]["uri"], "ui://widgets/test/widget.html");

    // Refusals: a forged name for another slug, an app-only tool, a slug not entitled.
    for name in [
        "hidden__show-widget",
        "widgets__app-only-refresh",
        "show-widget",
        "widgets__no-such-tool",
    ] {
        let refused = mcp.call_tool(CallToolRequestParams::new(name)).await;
        assert!(refused.is_err(), "{name}: {refused:?}");
    }
    assert!(
        mcp.read_resource(ReadResourceRequestParams::new(
            "ui://hidden/test/widget.html"
        ))
        .await
        .is_err()
    );
    let _ = mcp.cancel().await;

    // ?servers= narrows what is seen.
    let narrow = client(&app.url("/mcp?servers=clock"), &token)
        .await
        .unwrap();
    let names: Vec<String> = narrow
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["clock__get-time"]);
    let _ = narrow.cancel().await;
}

#[sqlx::test(migrations = false)]
async fn requests_without_a_valid_token_are_refused_with_401(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (token, id) = mint(&app, &admin).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |auth: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(app.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        request.send()
    };
    for auth in [
        None,
        Some("Bearer strad_nope".to_string()),
        Some(format!("Basic {token}")),
    ] {
        let response = post(auth.clone()).await.unwrap();
        assert_eq!(response.status(), 401, "{auth:?}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
    }
    assert_eq!(
        post(Some(format!("Bearer {token}")))
            .await
            .unwrap()
            .status(),
        200
    );
    // Expired and revoked tokens.
    sqlx::query("UPDATE login_tokens SET expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(
        post(Some(format!("Bearer {token}")))
            .await
            .unwrap()
            .status(),
        401
    );
    sqlx::query("UPDATE login_tokens SET expires_at = now() + interval '1 day'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let revoked = server_fn(&app, &admin, "tokens/revoke", &[("id", id.as_str())]).await;
    assert_eq!(revoked.status(), 200);
    assert_eq!(
        post(Some(format!("Bearer {token}")))
            .await
            .unwrap()
            .status(),
        401
    );
    // A browser session is not a token.
    let cookie_only = admin
        .post(app.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(cookie_only.status(), 401);
    // DNS rebinding: a Host that is not the console's.
    let (fresh, _) = mint(&app, &admin).await;
    let rebound = reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("host", "evil.example")
        .header("authorization", format!("Bearer {fresh}"))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(rebound.status().is_client_error(), "{}", rebound.status());
}

#[sqlx::test(migrations = false)]
async fn a_token_past_its_rate_gets_429_with_retry_after(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_RATE_PER_SECOND", "1")]).await;
    let admin = signed_in_admin(&app).await;
    let (token, _) = mint(&app, &admin).await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let response = reqwest::Client::new()
            .post(app.url("/mcp"))
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .send()
            .await
            .unwrap();
        if response.status() == 429 {
            assert_eq!(response.headers()["retry-after"], "1");
        }
        statuses.push(response.status().as_u16());
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        statuses.iter().take(2).all(|s| *s != 429),
        "a burst of two first: {statuses:?}"
    );
}

#[sqlx::test(migrations = false)]
async fn a_hanging_server_does_not_hold_up_another(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_TIMEOUT_SECONDS", "5")]).await;
    let admin = signed_in_admin(&app).await;
    let slow = TestServer::start().await;
    let fast = TestServer::start().await;
    register_server(&app, &admin, "slow", &slow.url, true).await;
    register_server(&app, &admin, "fast", &fast.url, true).await;
    grant(&app, &admin, "slow").await;
    grant(&app, &admin, "fast").await;
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

#[sqlx::test(migrations = false)]
async fn prompts_are_relayed_only_from_servers_approved_for_them(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    for (slug, capabilities) in [("talk", &["tools", "prompts"][..]), ("quiet", &["tools"])] {
        register_server_for(&app, &admin, slug, &server.url, capabilities).await;
        grant(&app, &admin, slug).await;
    }
    let (token, _) = mint(&app, &admin).await;
    let mcp = client(&app.url("/mcp"), &token).await.unwrap();
    let names: Vec<String> = mcp
        .list_all_prompts()
        .await
        .unwrap()
        .iter()
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(names, ["talk__summarize"]);
    let got = mcp
        .get_prompt(
            rmcp::model::GetPromptRequestParams::new("talk__summarize")
                .with_arguments(json!({"topic": "pins"}).as_object().unwrap().clone()),
        )
        .await
        .unwrap();
    assert!(
        serde_json::to_value(&got)
            .unwrap()
            .to_string()
            .contains("Summarize pins.")
    );
    assert!(
        mcp.get_prompt(rmcp::model::GetPromptRequestParams::new("quiet__summarize"))
            .await
            .is_err()
    );
    let _ = mcp.cancel().await;
}

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
    grant(app, admin, "slow").await;
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

#[sqlx::test(migrations = false)]
async fn plain_resources_and_templates_are_relayed_only_when_approved(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    for (slug, capabilities) in [
        ("docs", &["tools", "resources"][..]),
        ("closed", &["tools"]),
    ] {
        register_server_for(&app, &admin, slug, &server.url, capabilities).await;
        grant(&app, &admin, slug).await;
    }
    let (token, _) = mint(&app, &admin).await;
    let mcp = client(&app.url("/mcp"), &token).await.unwrap();
    let uris: Vec<String> = mcp
        .list_all_resources()
        .await
        .unwrap()
        .iter()
        .map(|r| r.uri.to_string())
        .collect();
    assert_eq!(
        uris,
        ["strad://docs/file:///test/readme.txt"],
        "no app resources without the apps approval, nothing from `closed`"
    );
    let templates: Vec<String> = mcp
        .list_all_resource_templates()
        .await
        .unwrap()
        .iter()
        .map(|t| t.uri_template.to_string())
        .collect();
    assert_eq!(templates, ["strad://docs/file:///test/notes/{name}"]);
    for (uri, text) in [
        (
            "strad://docs/file:///test/readme.txt",
            "not an app resource",
        ),
        ("strad://docs/file:///test/notes/monday", "note monday"),
    ] {
        let read = mcp
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .unwrap();
        let read = serde_json::to_value(&read).unwrap();
        assert_eq!(read["contents"][0]["uri"], uri);
        assert!(read.to_string().contains(text), "{read}");
    }
    for refused in [
        "strad://closed/file:///test/readme.txt",
        "strad://docs/ui://test/widget.html",
        "ui://docs/test/widget.html",
        "file:///test/readme.txt",
        "strad://nobody/file:///test/readme.txt",
    ] {
        assert!(
            mcp.read_resource(ReadResourceRequestParams::new(refused))
                .await
                .is_err(),
            "{refused}"
        );
    }
    let _ = mcp.cancel().await;
}

async fn next<T>(progress: &mut tokio::sync::mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(10), progress.recv())
        .await
        .expect("a progress notification within 10 s")
        .expect("the client is running")
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

#[sqlx::test(migrations = false)]
async fn a_person_may_open_only_so_many_sessions_a_minute(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (token, _) = mint(&app, &admin).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |body: &Value, session: Option<&str>| {
        let mut request = reqwest::Client::new()
            .post(app.url("/mcp"))
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18");
        }
        request.send()
    };
    let mut opened = Vec::new();
    for _ in 0..10 {
        let response = post(&initialize, None).await.unwrap();
        assert_eq!(response.status(), 200);
        opened.push(
            response.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    let refused = post(&initialize, None).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "6");
    assert!(refused.text().await.unwrap().contains("new sessions"));
    // Requests in a session already open are not new sessions.
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let in_session = post(&ping, Some(&opened[0])).await.unwrap();
    assert_ne!(in_session.status(), 429);
    // Another token of the same person shares the budget; another person has their own.
    let (second, _) = mint(&app, &admin).await;
    let bob = another_persons_token(&app).await;
    let open_with = |token: String| {
        reqwest::Client::new()
            .post(app.url("/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
    };
    assert_eq!(open_with(second).await.unwrap().status(), 429);
    assert_eq!(open_with(bob).await.unwrap().status(), 200);
}

/// A login token of a second person (a member, entitled to nothing).
async fn another_persons_token(app: &TestApp) -> String {
    let bob: uuid::Uuid = sqlx::query_scalar(
        "INSERT INTO users (issuer, subject, email) VALUES ('t', 'bob', 'bob@example.com')
         RETURNING id",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    app.caught_up().await;
    let mut tx = app.pool.begin().await.unwrap();
    let (_, secret) =
        app::tokens::ssr::store::mint(&mut tx, bob, "bob's", time::Duration::days(1), 20)
            .await
            .unwrap();
    tx.commit().await.unwrap();
    secret.expose().to_owned()
}

/// The request rate is the person's, not each token's: a second token of theirs finds the
/// budget the first spent, and another person's token has a budget of their own.
#[sqlx::test(migrations = false)]
async fn a_persons_tokens_share_one_request_budget(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_RATE_PER_SECOND", "1")]).await;
    let admin = signed_in_admin(&app).await;
    let (first, _) = mint(&app, &admin).await;
    let (second, _) = mint(&app, &admin).await;
    let bob = another_persons_token(&app).await;
    let ping = |token: &str| {
        reqwest::Client::new()
            .post(app.url("/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .send()
    };
    // The first token spends the burst (two) until it is refused.
    let mut spent = 0;
    while ping(&first).await.unwrap().status() != 429 {
        spent += 1;
        assert!(spent <= 4, "the first token was never refused");
    }
    // Within the second it takes to earn one more, the second token gets at most one.
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let response = ping(&second).await.unwrap();
        if response.status() == 429 {
            assert_eq!(response.headers()["retry-after"], "1");
        }
        statuses.push(response.status().as_u16());
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_ne!(ping(&bob).await.unwrap().status(), 429, "bob has his own");
}

#[sqlx::test(migrations = false)]
async fn past_the_most_sessions_strad_holds_a_new_one_waits_for_a_closed_one(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_SESSIONS_MAX", "2")]).await;
    let admin = signed_in_admin(&app).await;
    let (token, _) = mint(&app, &admin).await;
    let first = client(&app.url("/mcp"), &token).await.unwrap();
    let _second = client(&app.url("/mcp"), &token).await.unwrap();
    let refused = reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("authorization", format!("Bearer {token}"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "30");
    // A client that ends its session makes room.
    let _ = first.cancel().await;
    eventually(10, "a third session to be accepted", || async {
        client(&app.url("/mcp"), &token).await.ok()
    })
    .await;
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

/// A call through `/mcp` whose audit row cannot be committed answers an error, never the
/// server's result; once rows commit again, calls answer as usual.
#[sqlx::test(migrations = false)]
async fn a_relayed_call_whose_audit_row_cannot_be_committed_is_an_error(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (server, token) = widgets_and_token(&app, &admin).await;
    let mcp = client(&app.url("/mcp"), &token).await.unwrap();
    audit_refuses_rows_of(&app.pool, "mcp_tool_call").await;
    let show = |label: &str| {
        CallToolRequestParams::new("widgets__show-widget")
            .with_arguments(json!({"label": label}).as_object().unwrap().clone())
    };
    let refused = mcp.call_tool(show("secret")).await;
    assert!(refused.is_err(), "{refused:?}");
    assert!(!format!("{refused:?}").contains("widget:secret"));
    let called = server.state().await.unwrap()["calls"]["show-widget"].as_u64();
    assert_eq!(called, Some(1), "the call ran upstream");

    audit_rows_accepted_again(&app.pool).await;
    let answered = serde_json::to_value(mcp.call_tool(show("x")).await.unwrap()).unwrap();
    assert!(answered.to_string().contains("widget:x"), "{answered}");
    let _ = mcp.cancel().await;
}

/// A POST to `/mcp` as a client sends it, in `session` when given.
fn post_mcp(
    app: &TestApp,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    post_mcp_accepting(
        app,
        token,
        session,
        body,
        "application/json, text/event-stream",
    )
}

fn post_mcp_accepting(
    app: &TestApp,
    token: &str,
    session: Option<&str>,
    body: &Value,
    accept: &str,
) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new()
        .post(app.url("/mcp"))
        .bearer_auth(token)
        .header("accept", accept)
        .json(body);
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    request
}

/// A client session opened by hand; `notifications/initialized` sent when `initialized`.
async fn session_by_hand(app: &TestApp, token: &str, initialized: bool) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let response = post_mcp(app, token, None, &initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = response.text().await;
    if initialized {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = post_mcp(app, token, Some(&session), &note)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
    }
    session
}

/// The response's content type, and the JSON-RPC message answering `id` in its body (JSON,
/// or the `data:` of an event stream).
async fn answer_to(response: reqwest::Response, id: i64) -> (String, Value) {
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.text().await.unwrap();
    let answer = std::iter::once(body.as_str())
        .chain(body.lines().filter_map(|l| l.strip_prefix("data:")))
        .filter_map(|text| serde_json::from_str::<Value>(text.trim()).ok())
        .find(|message| message["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id} in {body}"));
    (kind, answer)
}

fn show_widget(id: i64, label: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "widgets__show-widget", "arguments": {"label": label}}})
}

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
    grant(&app, &admin, "widgets").await;
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
    grant(&app, &admin, "widgets").await;
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
    grant(&app, &admin, "clock").await;
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
