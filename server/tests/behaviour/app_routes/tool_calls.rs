//! An app's tool calls: what runs and is audited, and everything SPEC §8 refuses, refused
//! with its status and nothing called upstream.

use super::*;

#[sqlx::test(migrations = false)]
async fn a_read_only_app_tool_runs_and_is_audited(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let response = call(
        &app,
        &admin,
        "widget",
        json!({"name": "show-widget", "arguments": {"label": "hi"}}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "widget:hi");
    assert_eq!(
        answer["actions"],
        json!([]),
        "the result proposes no actions"
    );
    assert_eq!(calls_of(&server, "show-widget").await, 1);
    let (kind, payload): (String, Value) =
        sqlx::query_as("SELECT kind, payload FROM audit_log ORDER BY id DESC LIMIT 1")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(kind, "app_tool_call");
    assert_eq!(payload["tool"], "show-widget");
    assert_eq!(payload["outcome"], "ok");
    assert!(payload["arguments_sha256"].as_str().unwrap().len() == 64);
}

/// A page that goes away in the middle of a call (its request dropped) still has the call
/// audited once the server answers.
#[sqlx::test(migrations = false)]
async fn a_call_whose_page_goes_away_is_still_audited(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::with_slow_tool().await;
    register_server(&app, &admin, "widget", &server.url, true).await;
    grant(&app, &admin, "widget", LOCAL_ADMIN).await;
    let gone = admin
        .post(app.url("/apps/widget/tools/call"))
        .header("origin", &app.base)
        .header("sec-fetch-site", "same-origin")
        .json(&json!({"name": "slow", "arguments": {}}))
        .timeout(Duration::from_millis(200))
        .send()
        .await;
    assert!(gone.is_err(), "the page stopped waiting: {gone:?}");
    let outcomes = eventually(10, "the call's audit row", || async {
        Some(audit_outcomes(&app.pool, "app_tool_call").await).filter(|o| !o.is_empty())
    })
    .await;
    assert_eq!(outcomes, ["ok"]);
}

/// A call whose audit row cannot be committed is not answered with its result: the app
/// gets 503 and nothing of what the server said, from the bridge's call and from the
/// opening call alike, and a later call whose row commits answers as usual.
#[sqlx::test(migrations = false)]
async fn a_call_whose_audit_row_cannot_be_committed_answers_503_and_not_its_result(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let show = |label: &str| {
        let body = json!({"name": "show-widget", "arguments": {"label": label}});
        call(&app, &admin, "widget", body)
    };
    audit_refuses_rows_of(&app.pool, "app_tool_call").await;
    let response = show("secret").await;
    assert_eq!(response.status(), 503);
    let body = response.text().await.unwrap();
    assert!(!body.contains("widget:secret"), "{body}");
    assert_eq!(calls_of(&server, "show-widget").await, 1, "the call ran");
    let opening = post_from_console(
        &app,
        &admin,
        "/apps/widget/opening-call",
        json!({"uri": "ui://test/widget.html"}),
    )
    .await;
    assert_eq!(opening.status(), 503);
    assert!(!opening.text().await.unwrap().contains("widget:"));

    audit_rows_accepted_again(&app.pool).await;
    assert_eq!(show("hi").await.status(), 200);
    let rows: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'app_tool_call'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(rows, 1);
    let mut connection = app.pool.acquire().await.unwrap();
    let broken = app::audit::ssr::writer::first_broken_row(&mut connection).await;
    assert_eq!(broken.unwrap(), None);
}

/// Calls made at once are audited in one unbroken chain: each audit row is written in a
/// transaction of its own, so the chain's lock holds from reading the last hash to the insert.
#[sqlx::test(migrations = false)]
async fn concurrent_app_calls_are_audited_in_one_unbroken_chain(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let calls = (0..32).map(|i| {
        let (app, admin) = (&app, &admin);
        async move {
            let body = json!({"name": "show-widget", "arguments": {"label": format!("n{i}")}});
            call(app, admin, "widget", body).await.status()
        }
    });
    let statuses = futures::future::join_all(calls).await;
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert_eq!(calls_of(&server, "show-widget").await, 32);
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'app_tool_call'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(audited, 32);
    let mut conn = app.pool.acquire().await.unwrap();
    let broken = app::audit::ssr::writer::first_broken_row(&mut conn)
        .await
        .unwrap();
    assert_eq!(broken, None, "the chain forked under concurrent calls");
}

#[sqlx::test(migrations = false)]
async fn every_refused_call_is_refused_with_its_status_and_nothing_is_called(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    // A second server with a tool of its own, and a model-only tool on the first.
    let other = TestServer::start().await;
    other
        .control(json!({"addTool": {"name": "elsewhere", "annotations": {"readOnlyHint": true}}}))
        .await;
    register_server(&app, &admin, "other", &other.url, true).await;
    server.control(json!({"addTool": {"name": "model-only", "annotations": {"readOnlyHint": true}, "_meta": {"ui": {"visibility": ["model"]}}}})).await;
    refresh_server(&app, &admin, "widget").await;

    let url = app.url("/apps/widget/tools/call");
    let body = json!({"name": "show-widget", "arguments": {}}).to_string();
    // Not JSON.
    let response = admin
        .post(&url)
        .header("origin", &app.base)
        .header("content-type", "text/plain")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    let response = admin
        .post(&url)
        .header("origin", &app.base)
        .form(&[("name", "show-widget")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    // Cross-site, or no origin at all.
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("origin", "null"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let mut request = admin
            .post(&url)
            .header("content-type", "application/json")
            .body(body.clone());
        request = if name == "origin" {
            request.header(name, value)
        } else {
            request.header("origin", &app.base).header(name, value)
        };
        assert_eq!(
            request.send().await.unwrap().status(),
            403,
            "{name}: {value}"
        );
    }
    // Neither an Origin nor a browser's word that it is the console's own page.
    let response = admin
        .post(&url)
        .header("content-type", "application/json")
        .header("sec-fetch-site", "none")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403, "no Origin");
    // Policy refusals, each with its message.
    for (tool, message) in [
        ("model-only", "not available to apps"),
        ("elsewhere", "no such tool"),
        ("other/elsewhere", "no such tool"),
        ("write-note", "changes things"),
        ("app-only-refresh", "changes things"),
    ] {
        let response = call(
            &app,
            &admin,
            "widget",
            json!({"name": tool, "arguments": {}}),
        )
        .await;
        assert_eq!(response.status(), 403, "{tool}");
        assert!(response.text().await.unwrap().contains(message), "{tool}");
    }
    // A token session.
    let minted: Value = server_fn(&app, &admin, "tokens/mint", &[("name", "t"), ("days", "1")])
        .await
        .json()
        .await
        .unwrap();
    let viewer = app.new_browser();
    viewer
        .get(app.url(&format!("/?token={}", minted["secret"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    let response = call(
        &app,
        &viewer,
        "widget",
        json!({"name": "show-widget", "arguments": {}}),
    )
    .await;
    assert_eq!(response.status(), 403);
    assert!(response.text().await.unwrap().contains("login token"));
    // Not entitled.
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(
        call(&app, &admin, "widget", json!({"name": "show-widget"}))
            .await
            .status(),
        403
    );

    let state = server.state().await.unwrap();
    assert_eq!(
        state["calls"],
        json!({}),
        "nothing reached the server: {state}"
    );
    assert_eq!(other.state().await.unwrap()["calls"], json!({}));
    let refused: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'app_tool_call' AND payload->>'outcome' LIKE 'refused%'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(refused, 5, "refused calls are audited");
    // The token session's call never reached the call route: the write gate refused it,
    // and audited that.
    let gated: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'write_refused'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(gated, 1);
}

#[sqlx::test(migrations = false)]
async fn an_admin_mark_lets_an_unannotated_tool_run_from_an_app(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    assert_eq!(
        call(&app, &admin, "widget", json!({"name": "app-only-refresh"}))
            .await
            .status(),
        403
    );
    let marked = server_fn(
        &app,
        &admin,
        "policy/mark",
        &[
            ("slug", "widget"),
            ("tool", "app-only-refresh"),
            ("read_only", "true"),
        ],
    )
    .await;
    assert_eq!(marked.status(), 200);
    let response = call(&app, &admin, "widget", json!({"name": "app-only-refresh"})).await;
    assert_eq!(response.status(), 200);
    assert_eq!(calls_of(&server, "app-only-refresh").await, 1);
}

#[sqlx::test(migrations = false)]
async fn a_link_from_another_site_runs_nothing_and_calls_nothing(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    for site in ["cross-site", "same-site"] {
        let response = admin
            .get(app.url("/apps/widget?view=week"))
            .header("sec-fetch-site", site)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        let page = response.text().await.unwrap();
        assert!(page.contains("This link came from another site"), "{site}");
        assert!(
            page.contains("href=\"/apps/widget?view=week\""),
            "a same-origin Open link: {site}"
        );
        assert!(!page.contains("<iframe"), "{site}");
        assert!(
            csp.contains("; frame-src ") && csp.contains("frame-ancestors 'none'"),
            "{csp}"
        );
    }
    let pins: i64 = sqlx::query_scalar("SELECT count(*) FROM pins")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(pins, 0, "nothing pinned");
    assert_eq!(
        server.state().await.unwrap()["calls"],
        json!({}),
        "no MCP call"
    );
}

#[sqlx::test(migrations = false)]
async fn the_opening_call_runs_only_a_read_only_declaring_tool(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let post = |uri: &str| {
        admin
            .post(app.url("/apps/widget/opening-call"))
            .header("origin", &app.base)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"uri": uri}))
            .send()
    };
    let response = post("ui://test/widget.html").await.unwrap();
    assert_eq!(response.status(), 200);
    let answer: Value = response.json().await.unwrap();
    assert_eq!(answer["tool"], "show-widget");
    assert_eq!(answer["arguments"], json!({}));
    assert_eq!(answer["result"]["content"][0]["text"], "widget:");
    assert_eq!(answer["actions"], json!([]));
    assert_eq!(calls_of(&server, "show-widget").await, 1);
    // A resource no tool declares has no opening call.
    assert_eq!(post("ui://test/blob.html").await.unwrap().status(), 404);
    // A declaring tool that writes is not called.
    server.control(json!({"addTool": {"name": "show-widget", "_meta": {"ui": {"resourceUri": "ui://test/widget.html"}}}})).await;
    refresh_server(&app, &admin, "widget").await;
    let response = post("ui://test/widget.html").await.unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(calls_of(&server, "show-widget").await, 1);
}

#[sqlx::test(migrations = false)]
async fn a_page_reads_only_its_own_servers_ui_resources(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    let read = |uri: &'static str| {
        admin
            .post(app.url("/apps/widget/resources/read"))
            .header("origin", &app.base)
            .header("sec-fetch-site", "same-origin")
            .json(&json!({"uri": uri}))
            .send()
    };
    let response = read("ui://test/blob.html").await.unwrap();
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["contents"][0]["uri"], "ui://test/blob.html");
    assert_eq!(read("file:///test/readme.txt").await.unwrap().status(), 403);
    assert_eq!(
        read("ui://test/wrong-mime.html").await.unwrap().status(),
        502
    );
    let cross = admin
        .post(app.url("/apps/widget/resources/read"))
        .header("origin", "https://evil.example")
        .json(&json!({"uri": "ui://test/blob.html"}))
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
}

/// A person's console calls are bounded per second, however many pages or browsers they
/// use; past it they hear 429 with Retry-After, and a burst is audited once.
#[sqlx::test(migrations = false)]
async fn console_calls_are_limited_per_person_and_a_burst_is_audited_once(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_TOOL_CALLS_PER_SECOND", "1")]).await;
    let admin = signed_in_admin(&app).await;
    let other_browser = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin, "widget", &server.url, true).await;
    grant(&app, &admin, "widget", LOCAL_ADMIN).await;
    let show = json!({"name": "show-widget", "arguments": {}});
    let mut statuses = Vec::new();
    for browser in [&admin, &other_browser, &admin, &other_browser, &admin] {
        let response = call(&app, browser, "widget", show.clone()).await;
        if response.status() == 429 {
            assert_eq!(response.headers()["retry-after"], "1");
        }
        statuses.push(response.status().as_u16());
    }
    assert_eq!(
        &statuses[..2],
        &[200, 200],
        "a burst of twice the rate: {statuses:?}"
    );
    assert!(statuses[2..].iter().all(|s| *s == 429), "{statuses:?}");
    assert_eq!(calls_of(&server, "show-widget").await, 2);
    let outcomes = audit_outcomes(&app.pool, "app_tool_call").await;
    assert_eq!(outcomes, ["ok", "ok", "refused: rate"], "one row per burst");
}

/// An upstream failure reaches the page as a reference, never as the server's words; the
/// detail is in the audit log under that reference.
#[sqlx::test(migrations = false)]
async fn an_upstream_failure_is_told_by_reference_and_its_detail_audited(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    // The server goes away behind strad's back: its address now answers nothing.
    sqlx::query("UPDATE servers SET url = 'http://127.0.0.1:9/mcp' WHERE slug = 'widget'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let response = call(
        &app,
        &admin,
        "widget",
        json!({"name": "show-widget", "arguments": {}}),
    )
    .await;
    assert_eq!(response.status(), 502);
    let body: Value = response.json().await.unwrap();
    let message = body["error"].as_str().unwrap();
    let reference = message
        .split("(reference ")
        .nth(1)
        .and_then(|rest| rest.strip_suffix(").").map(str::to_owned))
        .unwrap_or_else(|| panic!("a reference: {message}"));
    assert!(!message.contains("127.0.0.1"), "{message}");
    let payload: Value = sqlx::query_scalar(
        "SELECT payload FROM audit_log WHERE kind = 'app_tool_call' ORDER BY id DESC LIMIT 1",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(payload["reference"], reference.as_str());
    assert!(
        payload["outcome"].as_str().unwrap().starts_with("error: "),
        "{payload}"
    );
}
