//! The app surface's routes: the frame serves the person's pin under the exact CSP, and the
//! tool-call route refuses everything SPEC §8 refuses — with nothing called upstream.

use crate::support::mcp::TestServer;
use crate::support::*;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;

/// Grants `widget` to the local admin.
async fn grant_widget(app: &TestApp, admin: &reqwest::Client) {
    let granted = server_fn(
        app,
        admin,
        "entitlements/grant",
        &[("slug", "widget"), ("grantee", "admin@localhost")],
    )
    .await;
    assert_eq!(granted.status(), 200);
}

/// strad with the test MCP server registered as `widget` (tools and apps approved) and
/// granted to the local admin.
async fn setup(pool: PgPool) -> (TestApp, reqwest::Client, TestServer) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin, "widget", &server.url, true).await;
    grant_widget(&app, &admin).await;
    (app, admin, server)
}

/// The app session for one frame load, as the console issues it when it opens the app.
async fn ticket(app: &TestApp, browser: &reqwest::Client, slug: &str) -> Option<String> {
    let response = server_fn(app, browser, "apps/open", &[("slug", slug)]).await;
    if !response.status().is_success() {
        return None;
    }
    let view: Value = response.json().await.unwrap();
    view["ticket"].as_str().map(str::to_owned)
}

/// Loads the frame with `ticket` as a browser loads a frame.
async fn frame_with(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    ticket: &str,
) -> reqwest::Response {
    browser
        .get(app.url(&format!("/apps/{slug}/frame/{ticket}")))
        .header("sec-fetch-site", "same-origin")
        .header("sec-fetch-dest", "iframe")
        .send()
        .await
        .unwrap()
}

/// Loads the frame as the host does: a fresh app session each time (a made-up one when
/// the console would not open the app).
async fn frame(app: &TestApp, browser: &reqwest::Client, slug: &str) -> reqwest::Response {
    let ticket = ticket(app, browser, slug)
        .await
        .unwrap_or_else(|| format!("{:032x}", rand::random::<u128>()));
    frame_with(app, browser, slug, &ticket).await
}

/// POSTs JSON to a console route as the console's own page does.
async fn post_from_console(
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

/// An app's tool call, as the bridge posts it.
async fn call(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    body: Value,
) -> reqwest::Response {
    post_from_console(app, browser, &format!("/apps/{slug}/tools/call"), body).await
}

async fn calls_of(server: &TestServer, tool: &str) -> u64 {
    server.state().await.unwrap()["calls"][tool]
        .as_u64()
        .unwrap_or(0)
}

/// The TCP connections the test server's `/mcp` requests have come on so far.
async fn mcp_connections(server: &TestServer) -> u64 {
    server.state().await.unwrap()["mcpConnections"]
        .as_u64()
        .unwrap()
}

#[sqlx::test(migrations = false)]
async fn the_frame_serves_the_pin_under_exactly_the_frame_csp(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let response = frame(&app, &admin, "widget").await;
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(response.headers()["x-frame-options"], "SAMEORIGIN");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body = response.text().await.unwrap();
    assert!(body.contains("<base target=\"_blank\">"));
    let hashes = app::apps::ssr::scripts::script_hashes(&body);
    assert_eq!(hashes.len(), 1, "the widget has one inline module script");
    assert_eq!(
        csp,
        format!(
            "sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox; default-src 'none'; \
             script-src '{}'; style-src 'unsafe-inline' data: blob: https://cdn.example.com; \
             img-src data: blob: https://cdn.example.com; font-src data: blob: https://cdn.example.com; \
             media-src data: blob: https://cdn.example.com; connect-src 'none'; object-src 'none'; \
             frame-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors {}",
            hashes[0], app.base
        ),
        "the declared `https://bad.example.com; script-src *` is dropped, the good domain kept"
    );

    // Later opens serve the pin, not the server's changed copy.
    server
        .control(json!({"html": "<!doctype html><p>changed</p>"}))
        .await;
    refresh_server(&app, &admin, "widget").await;
    let again = frame(&app, &admin, "widget").await.text().await.unwrap();
    assert_eq!(again, body);
    let pinned: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'app_pinned'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(pinned, 1, "pinned once, audited");
}

#[sqlx::test(migrations = false)]
async fn a_corrupt_pin_is_refused_with_a_clear_message(pool: PgPool) {
    let (app, admin, _server) = setup(pool).await;
    assert_eq!(frame(&app, &admin, "widget").await.status(), 200);
    // A ticket issued while the pin was intact; the bytes change before the frame loads.
    let issued = ticket(&app, &admin, "widget").await.unwrap();
    sqlx::query("UPDATE pins SET bytes = bytes || '<script>evil()</script>'::bytea")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let response = frame_with(&app, &admin, "widget", &issued).await;
    assert_eq!(response.status(), 409);
    let page = response.text().await.unwrap();
    assert!(page.contains("corrupt"));
    assert!(!page.contains("evil()"));
    // The console no longer opens it: no ticket, the page says why.
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["status"], "Corrupt");
    assert!(view["ticket"].is_null());
}

#[sqlx::test(migrations = false)]
async fn the_frame_is_refused_to_strangers_and_never_pinned_cross_site(pool: PgPool) {
    let (app, admin, _server) = setup(pool).await;
    assert_eq!(
        app.client
            .get(app.url("/apps/widget/frame/0123456789abcdef0123456789abcdef"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    // Not entitled and not existing answer alike.
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let not_granted = frame(&app, &admin, "widget").await;
    let missing = frame(&app, &admin, "no-such-slug").await;
    assert_eq!(
        (not_granted.status(), missing.status()),
        (
            reqwest::StatusCode::FORBIDDEN,
            reqwest::StatusCode::FORBIDDEN
        )
    );
    assert_eq!(
        not_granted.text().await.unwrap(),
        missing.text().await.unwrap()
    );
    grant_widget(&app, &admin).await;
    // A ticket issued, then the pin gone: a cross-site load of the frame does not pin.
    let issued = ticket(&app, &admin, "widget").await.unwrap();
    sqlx::query("DELETE FROM pins")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let cross = admin
        .get(app.url(&format!("/apps/widget/frame/{issued}")))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
    let pins: i64 = sqlx::query_scalar("SELECT count(*) FROM pins")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(pins, 0);
}

#[sqlx::test(migrations = false)]
async fn a_read_only_app_tool_runs_and_is_audited(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
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
    grant_widget(&app, &admin).await;
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
    let (app, admin, server) = setup(pool).await;
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

/// strad keeps its connection to a server between calls: twenty calls one after another
/// travel on the connections already open, where a client without a pool (rmcp's default)
/// opens one per call.
#[sqlx::test(migrations = false)]
async fn calls_to_a_server_reuse_its_connection(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
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
    let (app, admin, server) = setup(pool).await;
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

/// Calls made at once are audited in one unbroken chain: each audit row is written in a
/// transaction of its own, so the chain's lock holds from reading the last hash to the insert.
#[sqlx::test(migrations = false)]
async fn concurrent_app_calls_are_audited_in_one_unbroken_chain(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
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
    let (app, admin, server) = setup(pool).await;
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
    let (app, admin, server) = setup(pool).await;
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
    let (app, admin, server) = setup(pool).await;
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
async fn the_app_page_pins_on_first_open_and_limits_its_frame_to_one_path(pool: PgPool) {
    let (app, admin, _server) = setup(pool).await;
    let response = admin
        .get(app.url("/apps/widget"))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    let page = response.text().await.unwrap();
    let nonce = page
        .split("nonce=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the hydration script carries a nonce");
    assert_eq!(
        csp,
        format!(
            "script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; frame-src {}/apps/widget/frame/; \
             frame-ancestors 'none'; object-src 'none'; base-uri 'self'; form-action 'self'",
            app.base
        )
    );
    let src = page
        .split("data-src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the frame's address waits for the bridge in data-src");
    let ticket = src
        .strip_prefix("/apps/widget/frame/")
        .and_then(|rest| rest.strip_suffix("?uri=ui%3A%2F%2Ftest%2Fwidget.html"))
        .unwrap_or_else(|| panic!("unexpected frame address {src}"));
    assert!(ticket.len() == 32 && ticket.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(page.contains("sandbox=\"allow-scripts allow-popups allow-popups-to-escape-sandbox\""));
    let pins: i64 = sqlx::query_scalar("SELECT count(*) FROM pins")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(pins, 1);
    // Strangers get the 403 page, for a slug that exists or not.
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    for slug in ["widget", "no-such-slug"] {
        assert_eq!(
            admin
                .get(app.url(&format!("/apps/{slug}")))
                .send()
                .await
                .unwrap()
                .status(),
            403,
            "{slug}"
        );
    }
}

#[sqlx::test(migrations = false)]
async fn the_opening_call_runs_only_a_read_only_declaring_tool(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
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
async fn each_app_session_is_served_one_document(pool: PgPool) {
    let (app, admin, _server) = setup(pool).await;
    let issued = ticket(&app, &admin, "widget").await.unwrap();
    // Not as a top-level page (a console link to it, an address typed), and not a load the
    // page starts itself (a cross-site initiator): refusals that do not spend the ticket.
    for (site, dest, says) in [
        ("same-origin", "document", "only works inside the console"),
        ("none", "document", "only works inside the console"),
        ("cross-site", "iframe", "by itself"),
    ] {
        let refused = admin
            .get(app.url(&format!("/apps/widget/frame/{issued}")))
            .header("sec-fetch-site", site)
            .header("sec-fetch-dest", dest)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 403, "{site} {dest}");
        let page = refused.text().await.unwrap();
        assert!(!page.contains("<script"), "{site} {dest}");
        assert!(page.contains(says), "{site} {dest}: {page}");
    }
    let first = frame_with(&app, &admin, "widget", &issued).await;
    assert_eq!(first.status(), 200);
    let second = frame_with(&app, &admin, "widget", &issued).await;
    assert_eq!(second.status(), 409);
    assert_eq!(
        second.headers()["content-security-policy"],
        "sandbox; default-src 'none'; script-src 'none'; frame-ancestors 'self'"
    );
    assert!(second.text().await.unwrap().contains("second document"));
    // A ticket the console never issued, or one issued for another server (the person and
    // server binding is unit-tested with the ticket store).
    register_server(&app, &admin, "gadget", &_server.url, true).await;
    let granted = server_fn(
        &app,
        &admin,
        "entitlements/grant",
        &[("slug", "gadget"), ("grantee", "admin@localhost")],
    )
    .await;
    assert_eq!(granted.status(), 200);
    let for_widget = ticket(&app, &admin, "widget").await.unwrap();
    let made_up = "0123456789abcdef0123456789abcdef".to_string();
    for ticket in [&made_up, &for_widget] {
        let response = frame_with(&app, &admin, "gadget", ticket).await;
        assert_eq!(response.status(), 409, "{ticket}");
        assert!(!response.text().await.unwrap().contains("<script"));
    }
    // The wrong use spent it: the widget cannot use it now either.
    assert_eq!(
        frame_with(&app, &admin, "widget", &for_widget)
            .await
            .status(),
        409
    );
}

#[sqlx::test(migrations = false)]
async fn a_page_reads_only_its_own_servers_ui_resources(pool: PgPool) {
    let (app, admin, _server) = setup(pool).await;
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

/// A playground call, as the playground page posts it.
async fn play(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    body: Value,
) -> reqwest::Response {
    post_from_console(app, browser, &format!("/servers/{slug}/tools/call"), body).await
}

/// The playground's call route: the same locks as an app's, the model's side of visibility,
/// writing tools allowed (a person asked by hand), and every call audited.
#[sqlx::test(migrations = false)]
async fn playground_calls_pass_the_same_checks_and_are_audited(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    // What the playground offers: not the app-only tool.
    let listed: Value = server_fn(&app, &admin, "playground/tools", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"show-widget") && names.contains(&"write-note"),
        "{names:?}"
    );
    assert!(!names.contains(&"app-only-refresh"), "{names:?}");
    let widget = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "show-widget")
        .unwrap();
    assert_eq!(widget["app_uri"], "ui://test/widget.html");
    assert_eq!(
        widget["input_schema"]["properties"]["label"]["type"],
        "string"
    );

    let ran = play(
        &app,
        &admin,
        "widget",
        json!({"name": "write-note", "arguments": {"text": "hi"}}),
    )
    .await;
    assert_eq!(ran.status(), 200);
    let refused = play(&app, &admin, "widget", json!({"name": "app-only-refresh"})).await;
    assert_eq!(refused.status(), 403);
    assert!(refused.text().await.unwrap().contains("for apps only"));
    assert_eq!(
        play(&app, &admin, "widget", json!({"name": "no-such-tool"}))
            .await
            .status(),
        403
    );
    assert_eq!(
        play(&app, &admin, "no-such-slug", json!({"name": "write-note"}))
            .await
            .status(),
        403
    );
    let form = admin
        .post(app.url("/servers/widget/tools/call"))
        .header("origin", &app.base)
        .form(&[("name", "write-note")])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 415);
    let foreign = admin
        .post(app.url("/servers/widget/tools/call"))
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"name": "write-note"}))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    assert_eq!(
        play(
            &app,
            &app.new_browser(),
            "widget",
            json!({"name": "write-note"})
        )
        .await
        .status(),
        401
    );
    // A token session may look but not call.
    let minted: Value = server_fn(&app, &admin, "tokens/mint", &[("name", "t"), ("days", "1")])
        .await
        .json()
        .await
        .unwrap();
    let viewer = app.new_browser();
    let signed = viewer
        .get(app.url(&format!("/?token={}", minted["secret"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    assert!(signed.status().is_redirection() || signed.status().is_success());
    let listed: Value = server_fn(&app, &viewer, "playground/tools", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["view_only"], true);
    let by_token = play(&app, &viewer, "widget", json!({"name": "write-note"})).await;
    assert_eq!(by_token.status(), 403);
    assert!(by_token.text().await.unwrap().contains("login token"));

    assert_eq!(calls_of(&server, "write-note").await, 1);
    assert_eq!(calls_of(&server, "app-only-refresh").await, 0);
    let audited: Vec<(String, Value)> = sqlx::query_as(
        "SELECT kind, payload FROM audit_log WHERE kind = 'playground_tool_call' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let outcomes: Vec<&str> = audited
        .iter()
        .map(|(_, p)| p["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes[0], "ok");
    assert!(audited.iter().all(|(_, p)| p["surface"] == "playground"));
    assert_eq!(
        audited.len(),
        3,
        "run, app-only, unknown (the token session's call is the write gate's): {outcomes:?}"
    );
}

/// A person's pins: listed with whether the server's copy differs and whether each is
/// intact; revoking deletes the pin and is audited.
#[sqlx::test(migrations = false)]
async fn pins_are_listed_and_revoked_with_an_audit_row(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    assert!(
        ticket(&app, &admin, "widget").await.is_some(),
        "opening pins"
    );
    let listed = pins_of(&app, &admin).await;
    assert_eq!(listed[0]["uri"], "ui://test/widget.html");
    assert_eq!(
        (listed[0]["intact"].clone(), listed[0]["differs"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(
        listed[0]["granted_domains"],
        json!(["https://cdn.example.com"])
    );
    server
        .control(json!({"html": "<!doctype html><p>new</p>"}))
        .await;
    refresh_server(&app, &admin, "widget").await;
    assert_eq!(pins_of(&app, &admin).await[0]["differs"], true);
    sqlx::query("UPDATE pins SET bytes = bytes || 'x'::bytea")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(pins_of(&app, &admin).await[0]["intact"], false);
    let form = [("slug", "widget"), ("uri", "ui://test/widget.html")];
    let revoked: Value = server_fn(&app, &admin, "pins/revoke", &form)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(revoked, true);
    assert_eq!(pins_of(&app, &admin).await, json!([]));
    let again: Value = server_fn(&app, &admin, "pins/revoke", &form)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again, false);
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'app_pin_revoked'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(audited, 1);
}

async fn pins_of(app: &TestApp, browser: &reqwest::Client) -> Value {
    server_fn(app, browser, "pins/mine", &[])
        .await
        .json::<Value>()
        .await
        .unwrap()
}

async fn call_status(app: &TestApp, browser: &reqwest::Client) -> u16 {
    call(app, browser, "widget", json!({"name": "show-widget"}))
        .await
        .status()
        .as_u16()
}

/// What a call's authority is read from is remembered between calls (server/src/memo.rs).
/// A grant or a session ended anywhere — another instance, the command line, by hand in the
/// database — holds for the next call once the change is announced; one ended through this
/// strad holds for the very next call; and while announcements cannot be heard nothing
/// remembered is used.
#[sqlx::test(migrations = false)]
async fn remembered_authority_is_forgotten_as_soon_as_it_changes(pool: PgPool) {
    let (app, admin, _server) = setup(pool).await;
    eventually(10, "the server hears changes", || async {
        app.memos.is_live().then_some(())
    })
    .await;
    // Two calls: the second is answered from memory.
    assert_eq!(call_status(&app, &admin).await, 200);
    assert_eq!(call_status(&app, &admin).await, 200);

    // Elsewhere: the grant is deleted behind this strad's back.
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(call_status(&app, &admin).await, 403);

    // Through this strad: granted again, it holds at once; revoked, it ends at once.
    grant_widget(&app, &admin).await;
    assert_eq!(call_status(&app, &admin).await, 200);
    assert_eq!(call_status(&app, &admin).await, 200);
    let grant: i64 = sqlx::query_scalar("SELECT id FROM entitlements")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let revoked = server_fn(
        &app,
        &admin,
        "entitlements/revoke",
        &[("id", grant.to_string().as_str())],
    )
    .await;
    assert_eq!(revoked.status(), 200);
    assert_eq!(call_status(&app, &admin).await, 403);

    // A session ended elsewhere (another instance signed the person out).
    grant_widget(&app, &admin).await;
    assert_eq!(call_status(&app, &admin).await, 200);
    sqlx::query("DELETE FROM tower_sessions.session")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(call_status(&app, &admin).await, 401);

    // The listener's connection is lost, and a grant ends while nobody listens: what was
    // remembered is not used past the reconnection.
    let admin = signed_in_admin(&app).await;
    assert_eq!(call_status(&app, &admin).await, 200);
    assert_eq!(call_status(&app, &admin).await, 200);
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND query ILIKE 'listen%'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(ended, [true], "one listener");
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    eventually(10, "the listener is back", || async {
        app.memos.is_live().then_some(())
    })
    .await;
    app.caught_up().await;
    assert_eq!(call_status(&app, &admin).await, 403);
}

/// How many tools the playground lists of `widget`.
async fn listed(app: &TestApp, browser: &reqwest::Client) -> usize {
    let listed: Value = server_fn(app, browser, "playground/tools", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    listed["tools"].as_array().unwrap().len()
}

/// The opening call of `widget`'s app, as the host posts it.
async fn opening_call(app: &TestApp, browser: &reqwest::Client) -> reqwest::Response {
    post_from_console(
        app,
        browser,
        "/apps/widget/opening-call",
        json!({"uri": "ui://test/widget.html"}),
    )
    .await
}

/// Approved capabilities are a ceiling on every surface: without `tools` nothing is listed
/// or called from the playground, an app or the opening call; without `apps` there is no
/// app, no app call and no opening call, though the playground still works.
#[sqlx::test(migrations = false)]
async fn approved_capabilities_are_a_ceiling_on_every_surface(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let approve = |capabilities: &'static [&'static str]| {
        let (app, pool) = (&app, app.pool.clone());
        async move {
            sqlx::query("UPDATE servers SET capabilities = $1 WHERE slug = 'widget'")
                .bind(capabilities)
                .execute(&pool)
                .await
                .unwrap();
            app.caught_up().await;
        }
    };
    let show = json!({"name": "show-widget", "arguments": {}});

    assert!(listed(&app, &admin).await > 0);

    approve(&["apps", "resources"]).await;
    assert_eq!(
        listed(&app, &admin).await,
        0,
        "no tool listed without tools"
    );
    assert_eq!(
        call(&app, &admin, "widget", show.clone()).await.status(),
        403
    );
    assert_eq!(
        play(&app, &admin, "widget", show.clone()).await.status(),
        403
    );
    let opening = opening_call(&app, &admin).await;
    assert_eq!(opening.status(), 403);
    assert!(opening.text().await.unwrap().contains("not approved"));

    approve(&["tools"]).await;
    assert!(listed(&app, &admin).await > 0, "the playground lists again");
    assert_eq!(
        play(&app, &admin, "widget", show.clone()).await.status(),
        200
    );
    assert_eq!(
        call(&app, &admin, "widget", show.clone()).await.status(),
        403
    );
    assert_eq!(opening_call(&app, &admin).await.status(), 403);
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["status"], "NoApp");
    assert_eq!(view["ticket"], Value::Null);

    assert_eq!(
        calls_of(&server, "show-widget").await,
        1,
        "the playground's one"
    );
    let outcomes = audit_outcomes(&app.pool, "app_tool_call").await;
    assert_eq!(outcomes.len(), 4, "every refusal audited: {outcomes:?}");
    assert!(
        outcomes.iter().all(|o| o == "refused: Refuse(NotApproved)"),
        "{outcomes:?}"
    );
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
    grant_widget(&app, &admin).await;
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
    let (app, admin, _server) = setup(pool).await;
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
