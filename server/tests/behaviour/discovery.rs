//! Discovery against real MCP servers: the official example servers from npm over
//! Streamable HTTP and over stdio, and strad's own test server whose app HTML, tools and
//! faults change between discoveries.

use crate::support::mcp::{ExampleServer, TestServer, npm_bin};
use crate::support::*;
use serde_json::{Value, json};
use sqlx::PgPool;

fn tool<'a>(detail: &'a Value, name: &str) -> &'a Value {
    detail["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("tool {name}"))
}

fn app_resource<'a>(detail: &'a Value, uri: &str) -> &'a Value {
    detail["apps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["uri"] == uri)
        .unwrap_or_else(|| panic!("resource {uri}"))
}

async fn app_changes(pool: &PgPool, slug: &str) -> Vec<Value> {
    sqlx::query_scalar(
        "SELECT payload FROM audit_log WHERE kind = 'app_change' AND slug = $1 ORDER BY id",
    )
    .bind(slug)
    .fetch_all(pool)
    .await
    .unwrap()
}

fn is_hex_digest(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The three example servers: (bin, app tool, its resource, app-only tools).
const EXAMPLES: [(&str, &str, &str, &[&str]); 3] = [
    (
        "mcp-server-basic-vanillajs",
        "get-time",
        "ui://get-time/mcp-app.html",
        &[],
    ),
    (
        "mcp-budget-allocator-server",
        "get-budget-data",
        "ui://budget-allocator/mcp-app.html",
        &[],
    ),
    (
        "mcp-server-debug",
        "debug-tool",
        "ui://debug-tool/mcp-app.html",
        &["debug-refresh", "debug-log"],
    ),
];

#[sqlx::test(migrations = false)]
async fn the_example_servers_are_discovered_alike_over_http_and_stdio(pool: PgPool) {
    let log_dir = std::env::temp_dir();
    let file: String = EXAMPLES
        .iter()
        .enumerate()
        .map(|(i, (bin, ..))| {
            format!(
                "[[servers]]\nslug = \"stdio-{i}\"\ncommand = [\"{}\", \"--stdio\", \"--log-file={}/strad-stdio-{i}.log\"]\ncapabilities = [\"tools\", \"apps\"]\n",
                npm_bin(bin),
                log_dir.display()
            )
        })
        .collect();
    let app = spawn_app_with_file(pool, &file, &[]).await;
    let admin = signed_in_admin(&app).await;

    for (i, (bin, app_tool, uri, app_only)) in EXAMPLES.iter().enumerate() {
        let server = ExampleServer::start(bin).await;
        let http_slug = format!("http-{i}");
        register_server(&app, &admin, &http_slug, &server.url, true).await;
        let http = server_detail(&app, &admin, &http_slug).await;
        assert_eq!(http["summary"]["status"], "Ok", "{bin}: {http}");

        let declaring = tool(&http, app_tool);
        assert_eq!(declaring["resource_uri"], *uri, "{bin}");
        assert_eq!(declaring["visibility"], json!(["model", "app"]), "{bin}");
        assert_eq!(
            declaring["read_only_hint"], false,
            "{bin}: the examples annotate nothing"
        );
        assert!(is_hex_digest(&declaring["digest"]));
        for name in *app_only {
            assert_eq!(
                tool(&http, name)["visibility"],
                json!(["app"]),
                "{bin} {name}"
            );
        }
        let resource = app_resource(&http, uri);
        assert!(is_hex_digest(&resource["digest"]) && is_hex_digest(&resource["content_digest"]));
        assert!(
            resource["size"].as_i64().unwrap() > 100_000,
            "{bin}: the whole page"
        );
        let mut declared_by: Vec<&str> = app_only.to_vec();
        declared_by.push(app_tool);
        declared_by.sort();
        assert_eq!(resource["declared_by"], json!(declared_by), "{bin}");

        // The same package over stdio, declared in the file, discovered at start-up.
        let stdio_slug = format!("stdio-{i}");
        let stdio = eventually(60, "stdio discovery", || async {
            let d = server_detail(&app, &admin, &stdio_slug).await;
            (d["summary"]["status"] == "Ok").then_some(d)
        })
        .await;
        assert_eq!(
            app_resource(&stdio, uri)["digest"],
            resource["digest"],
            "{bin}: same resource over both transports"
        );
        assert_eq!(
            tool(&stdio, app_tool)["digest"],
            declaring["digest"],
            "{bin}: same tool over both transports"
        );

        // A second discovery of an unchanged server writes no event.
        let before = app_changes(&app.pool, &http_slug).await.len();
        assert!(
            before > 0,
            "the first discovery recorded what the server ships"
        );
        let outcome = refresh_server(&app, &admin, &http_slug).await;
        assert_eq!(outcome["changes"], 0, "{bin}: {outcome}");
        assert_eq!(app_changes(&app.pool, &http_slug).await.len(), before);
    }
}

#[sqlx::test(migrations = false)]
async fn a_changed_app_html_is_exactly_one_event_with_digests_diff_and_a_warning(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin, "widget", &server.url, true).await;
    let before = server_detail(&app, &admin, "widget").await;
    let old = app_resource(&before, "ui://test/widget.html").clone();
    let events_before = app_changes(&app.pool, "widget").await.len();

    server
        .control(
            json!({"html": "<!doctype html><html><body><p>changed on purpose</p></body></html>"}),
        )
        .await;
    refresh_server(&app, &admin, "widget").await;

    let events = app_changes(&app.pool, "widget").await;
    assert_eq!(events.len(), events_before + 1, "exactly one new event");
    let event = events.last().unwrap();
    let after = server_detail(&app, &admin, "widget").await;
    let new = app_resource(&after, "ui://test/widget.html");
    assert_eq!(event["item_kind"], "app_resource");
    assert_eq!(event["item"], "ui://test/widget.html");
    assert_eq!(event["change"], "changed");
    assert_eq!(event["old_digest"], old["digest"]);
    assert_eq!(event["new_digest"], new["digest"]);
    assert_eq!(event["new_size"], new["size"]);
    assert!(
        event["diff"]
            .as_str()
            .unwrap()
            .contains("+<!doctype html><html><body><p>changed on purpose</p>"),
        "{}",
        event["diff"]
    );

    let old_digest = old["digest"].as_str().unwrap();
    let new_digest = new["digest"].as_str().unwrap();
    let warnings = log_lines(&["WARN", "app change: server widget", old_digest, new_digest]);
    assert_eq!(
        warnings.len(),
        1,
        "one WARN line names the server, the item and both digests"
    );
    assert!(warnings[0].contains("ui://test/widget.html"));
}

#[sqlx::test(migrations = false)]
async fn a_tool_change_is_one_event_and_a_list_changed_notification_triggers_discovery(
    pool: PgPool,
) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin, "notify", &server.url, true).await;
    let before = app_changes(&app.pool, "notify").await.len();
    // Wait until strad's session holds the notification stream open.
    eventually(20, "the SSE stream", || async {
        let state = server.state().await?;
        state["sessions"]
            .as_array()?
            .iter()
            .any(|s| s["sse"] == true)
            .then_some(())
    })
    .await;

    // No Refresh: the server's tools/list_changed notification alone makes strad look again.
    server.control(json!({"describe": {"name": "show-widget", "description": "Shows the widget, differently"}})).await;
    let events = eventually(20, "the app-change event", || async {
        let events = app_changes(&app.pool, "notify").await;
        (events.len() > before).then_some(events)
    })
    .await;
    assert_eq!(events.len(), before + 1);
    let event = events.last().unwrap();
    assert_eq!(
        (
            event["item_kind"].as_str(),
            event["item"].as_str(),
            event["change"].as_str()
        ),
        (Some("tool"), Some("show-widget"), Some("changed"))
    );
    assert!(
        event["diff"]
            .as_str()
            .unwrap()
            .contains("+  \"description\": \"Shows the widget, differently\""),
        "{}",
        event["diff"]
    );
}

#[sqlx::test(migrations = false)]
async fn invalid_metadata_is_a_problem_of_its_item_not_of_the_server(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin, "meta", &server.url, true).await;
    let d = server_detail(&app, &admin, "meta").await;
    assert_eq!(d["summary"]["status"], "Ok");
    let problems = d["problems"].to_string();
    assert!(
        problems.contains("tool bad-link") && problems.contains("not a ui:// URI"),
        "{problems}"
    );
    assert!(tool(&d, "bad-link")["resource_uri"].is_null());
    assert_eq!(tool(&d, "app-only-refresh")["visibility"], json!(["app"]));
    assert_eq!(tool(&d, "show-widget")["read_only_hint"], true);
    assert!(
        problems.contains("resource ui://test/wrong-mime.html") && problems.contains("mimeType"),
        "{problems}"
    );
    let widget = app_resource(&d, "ui://test/widget.html");
    assert_eq!(
        widget["resource_domains"],
        json!([
            "https://cdn.example.com",
            "https://bad.example.com; script-src *"
        ])
    );
    assert_eq!(widget["permissions"], json!(["clipboardWrite"]));
    app_resource(&d, "ui://test/blob.html");
}

#[sqlx::test(migrations = false)]
async fn without_the_apps_capability_ui_resources_are_never_fetched(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    // If strad read any resource, the test server would exit.
    server
        .control(json!({"fault": {"kind": "die", "on": "resources/read"}}))
        .await;
    register_server(&app, &admin, "noapps", &server.url, false).await;
    let d = server_detail(&app, &admin, "noapps").await;
    assert_eq!(d["summary"]["status"], "Ok");
    assert_eq!(d["apps"], json!([]));
    assert!(
        d["tools"].as_array().unwrap().len() >= 4,
        "tools are still listed"
    );
    refresh_server(&app, &admin, "noapps").await;
    assert!(
        server.state().await.is_some(),
        "the server is alive: nothing was read"
    );
}

#[sqlx::test(migrations = false)]
async fn periodic_discovery_sees_a_change_the_server_did_not_announce(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_DISCOVERY_INTERVAL_SECONDS", "1")]).await;
    let admin = signed_in_admin(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin, "quiet", &server.url, true).await;
    let before = app_changes(&app.pool, "quiet").await.len();
    server
        .control(json!({"notify": false, "html": "<!doctype html><p>silently changed</p>"}))
        .await;
    let events = eventually(20, "periodic discovery", || async {
        let events = app_changes(&app.pool, "quiet").await;
        (events.len() > before).then_some(events)
    })
    .await;
    assert_eq!(events.len(), before + 1);
    assert_eq!(events.last().unwrap()["item"], "ui://test/widget.html");
}

#[sqlx::test(migrations = false)]
async fn a_configured_server_that_is_down_at_start_is_failing_and_strad_runs(pool: PgPool) {
    let file = "[[servers]]\nslug = \"ghost\"\ncommand = [\"/nonexistent/strad-test-server\"]\ncapabilities = [\"tools\"]\n";
    let app = spawn_app_with_file(pool, file, &[]).await;
    let admin = signed_in_admin(&app).await;
    let status = eventually(20, "the start-up discovery", || async {
        let d = server_detail(&app, &admin, "ghost").await;
        d["summary"]["status"]["Failing"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    assert!(status.contains("could not connect"), "{status}");
    assert_eq!(app.get("/healthz").await.status(), 200);
}
