//! What an app's answers carry and what a page may ask the host for beyond tool calls: the
//! island actions a result proposes, vetted one by one; the audit of ask-first host
//! actions; a download of the server's own resources; the page's log; and the open-link
//! allow-list an admin sets.

use crate::support::mcp::TestServer;
use crate::support::*;
use serde_json::{Value, json};
use sqlx::PgPool;

/// Adds a read-only tool `name` whose result proposes `actions`, and rediscovers.
async fn proposing(
    app: &TestApp,
    admin: &reqwest::Client,
    server: &TestServer,
    name: &str,
    actions: Value,
) {
    server
        .control(
            json!({"addTool": {"name": name, "annotations": {"readOnlyHint": true},
            "result": {"content": [{"type": "text", "text": "proposed"}],
                       "_meta": {"x-strad/actions": actions}}}}),
        )
        .await;
    refresh_server(app, admin, "widget").await;
}

/// The answer of an app's call of `tool`, which must succeed.
async fn app_call(app: &TestApp, browser: &reqwest::Client, tool: &str) -> Value {
    let response = post_from_console(
        app,
        browser,
        "/apps/widget/tools/call",
        json!({"name": tool, "arguments": {}}),
    )
    .await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// `(label, drawn, why)` of each vetted action.
fn outcomes(answer: &Value) -> Vec<(String, bool, Option<String>)> {
    answer["actions"]
        .as_array()
        .expect("actions is a list")
        .iter()
        .map(|a| {
            (
                a["label"].as_str().unwrap().to_owned(),
                a["drawn"].as_bool().unwrap(),
                a["why"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

/// A browser signed in from a login token of the local admin: it may look, not act.
async fn token_session(app: &TestApp, admin: &reqwest::Client) -> reqwest::Client {
    let minted: Value = server_fn(app, admin, "tokens/mint", &[("name", "t"), ("days", "1")])
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
    viewer
}

fn row(label: &str, drawn: bool, why: Option<&str>) -> (String, bool, Option<String>) {
    (label.to_owned(), drawn, why.map(str::to_owned))
}

#[sqlx::test(migrations = false)]
async fn each_proposed_action_is_drawn_or_says_why_not(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let actions = json!([
        {"label": "Show", "tool": "show-widget", "arguments": {"label": "again"}, "server": "widget"},
        {"label": "Note", "tool": "write-note", "kind": "danger"},
        {"label": "Ghost", "tool": "no-such-tool"},
        {"label": "Weather", "tool": "show-widget", "server": "weather"},
        {"label": "", "tool": "show-widget"},
        "not an object",
        {"label": "Late", "tool": "show-widget"},
    ]);
    proposing(&app, &admin, &server, "propose", actions).await;
    let answer = app_call(&app, &admin, "propose").await;
    assert_eq!(answer["result"]["content"][0]["text"], "proposed");
    assert!(
        answer["result"]["_meta"]["x-strad/actions"].is_array(),
        "the result is passed on as the server sent it"
    );
    let vetted = outcomes(&answer);
    assert_eq!(
        vetted[..4],
        [
            row("Show", true, None),
            row("Note", false, Some("outside this server's policy")),
            row("Ghost", false, Some("the server has no such tool")),
            row("Weather", false, Some("names another server")),
        ]
    );
    for malformed in &vetted[4..6] {
        assert!(!malformed.1);
        assert!(
            malformed.2.as_deref().unwrap().starts_with("malformed: "),
            "{malformed:?}"
        );
    }
    assert_eq!(vetted[6], row("Late", false, Some("more than 6 actions")));
    assert_eq!(
        answer["actions"][0],
        json!({"label": "Show", "tool": "show-widget", "arguments": {"label": "again"},
            "kind": "primary", "drawn": true, "why": null,
            "title": null, "description": "Shows the widget"})
    );
    assert!(
        answer["actions"][1].get("description").is_none(),
        "only a drawn action carries its tool's words"
    );
    assert_eq!(answer["actions"][1]["kind"], "danger");
    assert_eq!(
        server.state().await.unwrap()["calls"],
        json!({"propose": 1}),
        "vetting calls nothing"
    );

    // Under `ask`, a writing tool is drawn: pressing it asks the person first.
    let policy = server_fn(
        &app,
        &admin,
        "policy/set",
        &[
            ("slug", "widget"),
            ("playground_all", "on"),
            ("playground_tools", ""),
            ("apps_all", "on"),
            ("app_tools", ""),
            ("writing_from_apps", "ask"),
        ],
    )
    .await;
    assert_eq!(policy.status(), 200);
    let answer = app_call(&app, &admin, "propose").await;
    assert_eq!(outcomes(&answer)[1], row("Note", true, None));

    // An app list that leaves a tool out leaves its button out.
    let policy = server_fn(
        &app,
        &admin,
        "policy/set",
        &[
            ("slug", "widget"),
            ("playground_all", "on"),
            ("playground_tools", ""),
            ("app_tools", "propose"),
            ("writing_from_apps", "ask"),
        ],
    )
    .await;
    assert_eq!(policy.status(), 200);
    let answer = app_call(&app, &admin, "propose").await;
    let vetted = outcomes(&answer);
    assert_eq!(
        vetted[0],
        row("Show", false, Some("outside this server's policy"))
    );
    assert_eq!(
        vetted[1],
        row("Note", false, Some("outside this server's policy"))
    );
}

#[sqlx::test(migrations = false)]
async fn a_proposal_that_is_not_a_list_is_one_action_not_drawn(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let one = json!({"label": "Show", "tool": "show-widget"});
    proposing(&app, &admin, &server, "propose", one).await;
    let answer = app_call(&app, &admin, "propose").await;
    assert_eq!(
        outcomes(&answer),
        [row("", false, Some("x-strad/actions is not a list"))]
    );
}

#[sqlx::test(migrations = false)]
async fn the_opening_call_carries_its_results_actions_and_the_playground_the_raw_result(
    pool: PgPool,
) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    server
        .control(json!({"addTool": {"name": "show-widget",
            "annotations": {"readOnlyHint": true},
            "_meta": {"ui": {"resourceUri": "ui://test/widget.html"}},
            "result": {"content": [{"type": "text", "text": "opened"}],
                       "_meta": {"x-strad/actions": [{"label": "Again", "tool": "show-widget"}]}}}}))
        .await;
    refresh_server(&app, &admin, "widget").await;
    let opening = post_from_console(
        &app,
        &admin,
        "/apps/widget/opening-call",
        json!({"uri": "ui://test/widget.html"}),
    )
    .await;
    assert_eq!(opening.status(), 200);
    let answer: Value = opening.json().await.unwrap();
    assert_eq!(answer["tool"], "show-widget");
    assert_eq!(answer["arguments"], json!({}));
    assert_eq!(answer["result"]["content"][0]["text"], "opened");
    assert_eq!(outcomes(&answer), [row("Again", true, None)]);

    let played = post_from_console(
        &app,
        &admin,
        "/servers/widget/tools/call",
        json!({"name": "show-widget"}),
    )
    .await;
    assert_eq!(played.status(), 200);
    let result: Value = played.json().await.unwrap();
    assert_eq!(result["content"][0]["text"], "opened");
    assert!(result.get("actions").is_none() && result.get("result").is_none());
}

#[sqlx::test(migrations = false)]
async fn host_actions_are_audited_with_their_detail_bounded(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    let detail = json!({"url": "https://docs.example.com/a", "host": "docs.example.com",
        "host_ascii": "docs.example.com"});
    for (action, decision) in [
        ("open-link", "approved"),
        ("open-link", "allowed"),
        ("download", "declined"),
        ("clipboard", "approved"),
    ] {
        let body = json!({"action": action, "decision": decision, "detail": detail});
        let response = post_from_console(&app, &admin, "/apps/widget/host-actions", body).await;
        assert_eq!(response.status(), 200, "{action} {decision}");
        assert_eq!(response.json::<Value>().await.unwrap(), json!({}));
    }
    let long = json!({"text": "x".repeat(5000), "items": (0..50).collect::<Vec<_>>()});
    let body = json!({"action": "clipboard", "decision": "approved", "detail": long});
    assert_eq!(
        post_from_console(&app, &admin, "/apps/widget/host-actions", body)
            .await
            .status(),
        200
    );

    let rows: Vec<(Option<String>, Option<String>, Value)> = sqlx::query_as(
        "SELECT slug, actor_email, payload FROM audit_log WHERE kind = 'host_action' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(rows.len(), 5);
    assert_eq!(rows[0].0.as_deref(), Some("widget"));
    assert_eq!(rows[0].1.as_deref(), Some("admin@localhost"));
    assert_eq!(
        rows[0].2,
        json!({"action": "open-link", "decision": "approved", "detail": detail})
    );
    assert_eq!(rows[1].2["decision"], "allowed");
    assert_eq!(rows[2].2["action"], "download");
    let bounded = &rows[4].2["detail"];
    assert_eq!(bounded["text"].as_str().unwrap().len(), 2048);
    assert_eq!(bounded["items"].as_array().unwrap().len(), 20);

    // Only a link opens without asking; anything else of another shape is refused.
    for body in [
        json!({"action": "download", "decision": "allowed", "detail": {}}),
        json!({"action": "print", "decision": "approved", "detail": {}}),
        json!({"action": "clipboard", "decision": "approved", "detail": "text"}),
    ] {
        let response =
            post_from_console(&app, &admin, "/apps/widget/host-actions", body.clone()).await;
        assert_eq!(response.status(), 400, "{body}");
        assert!(response.json::<Value>().await.unwrap()["error"].is_string());
    }
    // Not entitled, or no such slug: the same 403; a stranger hears 401.
    let body = json!({"action": "clipboard", "decision": "approved", "detail": {}});
    let elsewhere =
        post_from_console(&app, &admin, "/apps/nowhere/host-actions", body.clone()).await;
    assert_eq!(elsewhere.status(), 403);
    let stranger = app.new_browser();
    let anonymous =
        post_from_console(&app, &stranger, "/apps/widget/host-actions", body.clone()).await;
    assert_eq!(anonymous.status(), 401);
    let viewer = token_session(&app, &admin).await;
    let by_token = post_from_console(&app, &viewer, "/apps/widget/host-actions", body).await;
    assert_eq!(by_token.status(), 403);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'host_action'")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(rows, 5, "nothing refused is recorded as a host action");
}

#[sqlx::test(migrations = false)]
async fn a_download_reads_any_resource_of_the_apps_own_server(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let readme = json!({"uri": "file:///test/readme.txt"});
    let response = post_from_console(&app, &admin, "/apps/widget/download", readme.clone()).await;
    assert_eq!(response.status(), 200);
    let read: Value = response.json().await.unwrap();
    let contents = read["contents"].as_array().expect("a ReadResourceResult");
    assert_eq!(contents[0]["uri"], "file:///test/readme.txt");
    // `resources/read` still serves app resources only.
    let as_app =
        post_from_console(&app, &admin, "/apps/widget/resources/read", readme.clone()).await;
    assert_eq!(as_app.status(), 403);
    let widget = json!({"uri": "ui://test/widget.html"});
    assert_eq!(
        post_from_console(&app, &admin, "/apps/widget/download", widget)
            .await
            .status(),
        200
    );
    // A resource the server does not have is the server's failure, told by reference.
    let missing = json!({"uri": "file:///test/absent.txt"});
    assert_eq!(
        post_from_console(&app, &admin, "/apps/widget/download", missing)
            .await
            .status(),
        502
    );
    // Another server's, or none of the person's: 403.
    assert_eq!(
        post_from_console(&app, &admin, "/apps/nowhere/download", readme.clone())
            .await
            .status(),
        403
    );
    // A token session may look, not download.
    let viewer = token_session(&app, &admin).await;
    let by_token = post_from_console(&app, &viewer, "/apps/widget/download", readme.clone()).await;
    assert_eq!(by_token.status(), 403);
    // Without the apps capability, no app, and nothing to download.
    let approve = server_fn(
        &app,
        &admin,
        "servers/update",
        &[
            ("slug", "widget"),
            ("display_name", "widget"),
            ("url", &server.url),
            ("cap_tools", "on"),
            ("enabled", "on"),
        ],
    )
    .await;
    assert_eq!(approve.status(), 200);
    assert_eq!(
        post_from_console(&app, &admin, "/apps/widget/download", readme)
            .await
            .status(),
        403
    );
}

#[sqlx::test(migrations = false)]
async fn a_pages_log_is_accepted_alike_within_and_over_the_rate(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    // Twice the rate in a burst: the lines past it are dropped, and the page hears the same.
    for i in 0..20 {
        let line = json!({"level": "info", "logger": "widget", "data": {"line": i}});
        let response = post_from_console(&app, &admin, "/apps/widget/log", line).await;
        assert_eq!(response.status(), 204, "line {i}");
    }
    let without_logger = json!({"level": "warning", "data": "x".repeat(10_000)});
    assert_eq!(
        post_from_console(&app, &admin, "/apps/widget/log", without_logger)
            .await
            .status(),
        204
    );
    let bad = json!({"level": "shout", "data": 1});
    assert_eq!(
        post_from_console(&app, &admin, "/apps/widget/log", bad)
            .await
            .status(),
        400
    );
    let line = json!({"level": "info", "data": 1});
    assert_eq!(
        post_from_console(&app, &admin, "/apps/nowhere/log", line.clone())
            .await
            .status(),
        403
    );
    let viewer = token_session(&app, &admin).await;
    assert_eq!(
        post_from_console(&app, &viewer, "/apps/widget/log", line)
            .await
            .status(),
        403
    );
}

/// The app view of `widget` for `browser`.
async fn app_view(app: &TestApp, browser: &reqwest::Client) -> Value {
    let response = server_fn(app, browser, "apps/open", &[("slug", "widget")]).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

#[sqlx::test(migrations = false)]
async fn link_hosts_set_by_an_admin_are_audited_and_reach_the_app(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    assert_eq!(app_view(&app, &admin).await["link_hosts"], json!([]));
    let set = |hosts: &'static str| {
        let (app, admin) = (&app, &admin);
        async move {
            server_fn(
                app,
                admin,
                "servers/link-hosts",
                &[("slug", "widget"), ("hosts", hosts)],
            )
            .await
        }
    };
    let response = set("Docs.Example.com\n\n*.bücher.test\n").await;
    assert_eq!(response.status(), 200);
    let stored = json!(["docs.example.com", "*.xn--bcher-kva.test"]);
    assert_eq!(response.json::<Value>().await.unwrap(), stored);
    assert_eq!(app_view(&app, &admin).await["link_hosts"], stored);
    assert_eq!(
        server_detail(&app, &admin, "widget").await["summary"]["link_hosts"],
        stored
    );

    assert_eq!(set("docs.example.com").await.status(), 200);
    // A line that is more than a host refuses the whole list, and changes nothing.
    let refused = set("docs.example.com\nhttps://evil.test/").await;
    assert_eq!(refused.status(), 400);
    assert!(refused.text().await.unwrap().contains("line 2"));
    assert_eq!(
        app_view(&app, &admin).await["link_hosts"],
        json!(["docs.example.com"])
    );

    let payloads: Vec<(Option<String>, Value)> = sqlx::query_as(
        "SELECT slug, payload FROM audit_log WHERE kind = 'link_hosts_changed' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(
        payloads,
        [
            (
                Some("widget".into()),
                json!({"before": [], "after": stored})
            ),
            (
                Some("widget".into()),
                json!({"before": stored, "after": ["docs.example.com"]})
            ),
        ]
    );
}

#[sqlx::test(migrations = false)]
async fn only_an_admin_sets_link_hosts(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    let set = |browser: reqwest::Client| {
        let app = &app;
        async move {
            let form = [("slug", "widget"), ("hosts", "evil.test")];
            server_fn(app, &browser, "servers/link-hosts", &form)
                .await
                .status()
        }
    };
    assert_eq!(set(token_session(&app, &admin).await).await, 403);
    let member = signed_in_with(&app, &[]).await;
    assert_eq!(set(member).await, 403);
    let hosts: Vec<String> =
        sqlx::query_scalar("SELECT link_hosts FROM servers WHERE slug = 'widget'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(hosts.is_empty());
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'link_hosts_changed'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(audited, 0);
}
