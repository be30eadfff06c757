//! Approvals of writing tools asked for by apps (SPEC §8): under `ask`, a call runs only
//! with the person's approval of exactly that call, made in that browser session, once,
//! within its lifetime — and whatever is refused, nothing reaches the server and the audit
//! log says what happened.

use std::sync::Arc;

use crate::support::mcp::TestServer;
use crate::support::*;
use app::apps::ssr::approvals::{
    ApprovalSecret, Binding, arguments_sha256, mint_at, session_binding,
};
use reqwest::cookie::{CookieStore, Jar};
use serde_json::{Value, json};
use sqlx::PgPool;

const AWAITING: &str = "This tool changes things: approve it in the console.";
const NOT_MATCHING: &str = "This approval does not match this call.";
const EXPIRED: &str = "This approval has expired; approve the call again.";
const USED: &str = "This approval was already used.";

/// A browser whose cookies the test can read (to know its session, as the server does).
struct Browser {
    client: reqwest::Client,
    jar: Arc<Jar>,
}

impl Browser {
    fn new() -> Browser {
        let jar = Arc::new(Jar::default());
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(
            "sec-fetch-site",
            reqwest::header::HeaderValue::from_static("same-origin"),
        );
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .cookie_provider(jar.clone())
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(20))
            .build()
            .unwrap();
        Browser { client, jar }
    }

    /// The id of this browser's console session, from its cookie.
    fn session_id(&self, app: &TestApp) -> String {
        let cookies = self.jar.cookies(&app.base.parse().unwrap()).unwrap();
        cookies
            .to_str()
            .unwrap()
            .split("; ")
            .find_map(|c| c.strip_prefix("strad_session="))
            .expect("a session cookie")
            .to_owned()
    }
}

/// A second browser of the local admin, signed in on its own.
async fn local_browser(app: &TestApp) -> Browser {
    let browser = Browser::new();
    sign_in_locally(app, &browser.client).await;
    browser
}

async fn set_policy(app: &TestApp, admin: &reqwest::Client, slug: &str, writing: &str) {
    let policy = [
        ("slug", slug),
        ("playground_all", "on"),
        ("playground_tools", ""),
        ("apps_all", "on"),
        ("app_tools", ""),
        ("writing_from_apps", writing),
    ];
    let response = server_fn(app, admin, "policy/set", &policy).await;
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
}

async fn grant(app: &TestApp, admin: &reqwest::Client, slug: &str, grantee: &str) {
    let granted = server_fn(
        app,
        admin,
        "entitlements/grant",
        &[("slug", slug), ("grantee", grantee)],
    )
    .await;
    assert_eq!(granted.status(), 200);
}

/// strad in local mode with the test server as `widget` (tools and apps approved), granted
/// to the admin under the `ask` rule; the admin's browser.
async fn setup(pool: PgPool) -> (TestApp, Browser, TestServer) {
    let app = spawn_app(pool).await;
    let admin = local_browser(&app).await;
    let server = TestServer::start().await;
    register_server(&app, &admin.client, "widget", &server.url, true).await;
    grant(&app, &admin.client, "widget", "admin@localhost").await;
    set_policy(&app, &admin.client, "widget", "ask").await;
    (app, admin, server)
}

async fn post_json(
    app: &TestApp,
    browser: &reqwest::Client,
    path: &str,
    body: &Value,
) -> reqwest::Response {
    browser
        .post(app.url(path))
        .header("origin", &app.base)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// An app's call of `tool` with `arguments`, carrying `approval` when given.
async fn call(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    tool: &str,
    arguments: Value,
    approval: Option<&str>,
) -> (u16, Value) {
    let mut body = json!({"name": tool, "arguments": arguments});
    if let Some(approval) = approval {
        body["approval"] = json!(approval);
    }
    let path = format!("/apps/{slug}/tools/call");
    let response = post_json(app, browser, &path, &body).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The person's answer in the host's approval panel.
async fn answer(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    tool: &str,
    arguments: Value,
    decision: &str,
) -> (u16, Value) {
    let body = json!({"tool": tool, "arguments": arguments, "decision": decision});
    let response = post_json(app, browser, &format!("/apps/{slug}/approvals"), &body).await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Approves the call and returns the approval.
async fn approve(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    tool: &str,
    arguments: Value,
) -> String {
    let (status, body) = answer(app, browser, slug, tool, arguments, "approve").await;
    assert_eq!(status, 200, "{body}");
    body["approval"].as_str().expect("an approval").to_owned()
}

async fn calls_of(server: &TestServer, tool: &str) -> u64 {
    server.state().await.unwrap()["calls"][tool]
        .as_u64()
        .unwrap_or(0)
}

/// The payloads of the audit rows of `kind`, oldest first.
async fn audited(pool: &PgPool, kind: &str) -> Vec<Value> {
    sqlx::query_scalar("SELECT payload FROM audit_log WHERE kind = $1 ORDER BY id")
        .bind(kind)
        .fetch_all(pool)
        .await
        .unwrap()
}

/// The outcomes of the app calls audited so far, once the writer has committed them.
async fn app_call_outcomes(app: &TestApp, count: usize) -> Vec<String> {
    eventually(10, "the app calls' audit rows", || async {
        let outcomes = audit_outcomes(&app.pool, "app_tool_call").await;
        (outcomes.len() >= count).then_some(outcomes)
    })
    .await
}

fn digest(arguments: Value) -> String {
    arguments_sha256(arguments.as_object().unwrap())
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

async fn stored_secret(pool: &PgPool) -> ApprovalSecret {
    let secret: Vec<u8> =
        sqlx::query_scalar("SELECT secret FROM host_secrets WHERE name = 'approval'")
            .fetch_one(pool)
            .await
            .unwrap();
    ApprovalSecret::new(secret).unwrap()
}

async fn person_id(pool: &PgPool, email: &str) -> uuid::Uuid {
    sqlx::query_scalar("SELECT id FROM users WHERE email = $1")
        .bind(email)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[sqlx::test(migrations = false)]
async fn a_writing_tool_under_ask_runs_once_and_only_once_it_is_approved(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    let arguments = json!({"text": "hello", "a": [1, {"z": true, "b": null}]});

    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        None,
    )
    .await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(
        body,
        json!({"error": AWAITING, "approval": {"server": "widget", "slug": "widget",
            "tool": "write-note", "title": null, "description": "Writes a note",
            "arguments": arguments}})
    );
    assert_eq!(calls_of(&server, "write-note").await, 0, "nothing ran");

    let (status, granted) = answer(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        "approve",
    )
    .await;
    assert_eq!(status, 200, "{granted}");
    let token = granted["approval"].as_str().unwrap().to_owned();
    let expires_at = granted["expires_at"].as_i64().unwrap();
    assert!((expires_at - now() - 120).abs() <= 2, "lives 120 s");
    let nonce = token.split('.').nth(1).unwrap().to_owned();
    assert_eq!(
        audited(&app.pool, "approval_granted").await,
        vec![
            json!({"tool": "write-note", "arguments_sha256": digest(arguments.clone()),
            "nonce": nonce, "expires_at": expires_at})
        ]
    );

    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        Some(&token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(calls_of(&server, "write-note").await, 1);
    assert_eq!(
        audited(&app.pool, "approval_used").await,
        vec![
            json!({"tool": "write-note", "arguments_sha256": digest(arguments.clone()),
            "nonce": nonce})
        ]
    );

    // The same approval again: a replay.
    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        Some(&token),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": USED})));
    assert_eq!(calls_of(&server, "write-note").await, 1, "nothing more ran");
    assert_eq!(audited(&app.pool, "approval_used").await.len(), 1);
    assert_eq!(
        app_call_outcomes(&app, 3).await,
        [
            "refused: awaiting approval",
            "ok",
            "refused: approval already used"
        ]
    );
}

#[sqlx::test(migrations = false)]
async fn an_approval_runs_nothing_but_the_very_call_it_was_made_for(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    // Another writing tool of the same server, and the same server as another slug.
    server
        .control(json!({"addTool": {"name": "erase-note", "description": "Erases a note"}}))
        .await;
    refresh_server(&app, browser, "widget").await;
    register_server(&app, browser, "other", &server.url, true).await;
    grant(&app, browser, "other", "admin@localhost").await;
    set_policy(&app, browser, "other", "ask").await;
    let arguments = json!({"text": "hello"});
    let token = approve(&app, browser, "widget", "write-note", arguments.clone()).await;
    let (_, mac) = token.rsplit_once('.').unwrap();
    let forged = token.replace(mac, &"A".repeat(43));
    let second_session = local_browser(&app).await;

    let attempts: Vec<(&str, &reqwest::Client, &str, &str, Value, String)> = vec![
        (
            "other arguments",
            browser,
            "widget",
            "write-note",
            json!({"text": "bye"}),
            token.clone(),
        ),
        (
            "no arguments",
            browser,
            "widget",
            "write-note",
            json!({}),
            token.clone(),
        ),
        (
            "another tool",
            browser,
            "widget",
            "erase-note",
            arguments.clone(),
            token.clone(),
        ),
        (
            "another slug",
            browser,
            "other",
            "write-note",
            arguments.clone(),
            token.clone(),
        ),
        (
            "another browser session of the same person",
            &second_session.client,
            "widget",
            "write-note",
            arguments.clone(),
            token.clone(),
        ),
        (
            "a forged MAC",
            browser,
            "widget",
            "write-note",
            arguments.clone(),
            forged,
        ),
        (
            "not an approval",
            browser,
            "widget",
            "write-note",
            arguments.clone(),
            "yes".into(),
        ),
    ];
    let tried = attempts.len();
    for (what, client, slug, tool, arguments, approval) in attempts {
        let (status, body) = call(&app, client, slug, tool, arguments, Some(&approval)).await;
        assert_eq!(
            (status, body),
            (403, json!({"error": NOT_MATCHING})),
            "{what}"
        );
    }
    let state = server.state().await.unwrap();
    assert_eq!(
        state["calls"],
        json!({}),
        "nothing reached the server: {state}"
    );
    let outcomes = app_call_outcomes(&app, tried).await;
    assert_eq!(outcomes, vec!["refused: approval does not match"; tried]);
    assert!(audited(&app.pool, "approval_used").await.is_empty());

    // None of them spent it: the call it was made for runs.
    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments,
        Some(&token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(calls_of(&server, "write-note").await, 1);
}

#[sqlx::test(migrations = false)]
async fn an_approval_past_its_lifetime_is_refused_and_its_expiry_audited(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    let arguments = json!({"text": "late"});
    let binding = Binding {
        person: person_id(&app.pool, "admin@localhost").await,
        session: session_binding(&admin.session_id(&app)),
        slug: "widget".into(),
        tool: "write-note".into(),
        arguments_sha256: digest(arguments.clone()),
    };
    let secret = stored_secret(&app.pool).await;
    let late = mint_at(&secret, &binding, now() - 121);

    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        Some(&late.token),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": EXPIRED})));
    assert_eq!(calls_of(&server, "write-note").await, 0, "nothing ran");
    assert_eq!(
        audited(&app.pool, "approval_expired").await,
        vec![
            json!({"tool": "write-note", "arguments_sha256": binding.arguments_sha256,
            "nonce": late.nonce})
        ]
    );
    assert_eq!(
        app_call_outcomes(&app, 1).await,
        ["refused: approval expired"]
    );

    // The same binding minted now is good: the refusal was the expiry's alone.
    let fresh = mint_at(&secret, &binding, now());
    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments,
        Some(&fresh.token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(calls_of(&server, "write-note").await, 1);
}

#[sqlx::test(migrations = false)]
async fn a_decline_and_a_page_that_stopped_waiting_are_audited_and_run_nothing(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    let arguments = json!({"text": "no"});
    let digest = digest(arguments.clone());

    let declined = answer(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        "decline",
    )
    .await;
    assert_eq!(declined, (200, json!({})));
    let gave_up = answer(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        "expired",
    )
    .await;
    assert_eq!(gave_up, (200, json!({})));
    assert_eq!(
        audited(&app.pool, "approval_declined").await,
        vec![json!({"tool": "write-note", "arguments_sha256": digest})]
    );
    assert_eq!(
        audited(&app.pool, "approval_expired").await,
        vec![json!({"tool": "write-note", "arguments_sha256": digest,
            "reason": "the app stopped waiting"})]
    );
    assert!(audited(&app.pool, "approval_granted").await.is_empty());
    assert_eq!(server.state().await.unwrap()["calls"], json!({}));
}

#[sqlx::test(migrations = false)]
async fn only_a_call_that_may_run_once_approved_can_be_approved(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    server.control(json!({"addTool": {"name": "model-only", "annotations": {"readOnlyHint": true}, "_meta": {"ui": {"visibility": ["model"]}}}})).await;
    refresh_server(&app, browser, "widget").await;

    // A read-only tool pressed as an island action runs without an approval: nothing is
    // minted, and the press is on record.
    let (status, body) = answer(&app, browser, "widget", "show-widget", json!({}), "approve").await;
    assert_eq!((status, body), (200, json!({"approval": null})));
    assert_eq!(
        audited(&app.pool, "approval_granted").await,
        vec![json!({"tool": "show-widget", "arguments_sha256": digest(json!({}))})]
    );

    for (tool, message) in [
        ("model-only", "not available to apps"),
        ("no-such-tool", "no such tool"),
    ] {
        let (status, body) = answer(&app, browser, "widget", tool, json!({}), "approve").await;
        assert_eq!(status, 403, "{tool}");
        assert!(
            body["error"].as_str().unwrap().contains(message),
            "{tool}: {body}"
        );
    }
    // Under `deny`, a writing tool is refused, its approval too.
    set_policy(&app, browser, "widget", "deny").await;
    let (status, body) = answer(&app, browser, "widget", "write-note", json!({}), "approve").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("refuses such calls"),
        "{body}"
    );
    assert_eq!(audited(&app.pool, "approval_granted").await.len(), 1);
    assert_eq!(server.state().await.unwrap()["calls"], json!({}));
}

#[sqlx::test(migrations = false)]
async fn the_approvals_route_has_the_locks_of_every_console_write(pool: PgPool) {
    let (app, admin, _server) = setup(pool).await;
    let body = json!({"tool": "write-note", "arguments": {}, "decision": "approve"});
    let url = app.url("/apps/widget/approvals");

    let anonymous = app.new_browser();
    let response = post_json(&app, &anonymous, "/apps/widget/approvals", &body).await;
    assert_eq!(response.status(), 401);
    let response = admin
        .client
        .post(&url)
        .header("origin", &app.base)
        .header("content-type", "text/plain")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    let response = admin
        .client
        .post(&url)
        .header("origin", "https://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403, "cross-site");
    let response = post_json(&app, &admin.client, "/apps/nowhere/approvals", &body).await;
    assert_eq!(response.status(), 403, "a slug not granted");
    let malformed = json!({"tool": "write-note", "decision": "maybe"});
    let response = post_json(&app, &admin.client, "/apps/widget/approvals", &malformed).await;
    assert_eq!(response.status(), 400);

    // A session opened with a login token may view, never approve.
    let minted: Value = server_fn(
        &app,
        &admin.client,
        "tokens/mint",
        &[("name", "t"), ("days", "1")],
    )
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
    let response = post_json(&app, &viewer, "/apps/widget/approvals", &body).await;
    assert_eq!(response.status(), 403);
    assert!(
        !response.text().await.unwrap().contains("v1."),
        "no approval"
    );
    assert!(audited(&app.pool, "approval_granted").await.is_empty());
}

#[sqlx::test(migrations = false)]
async fn another_person_cannot_use_someone_elses_approval(pool: PgPool) {
    let (app, issuer) =
        spawn_app_with_issuer(pool, &[("STRAD_BOOTSTRAP_ADMINS", "alice@example.com")]).await;
    let alice = app.new_browser();
    sign_in_as(&app, &issuer, &alice, "alice").await;
    let erin = app.new_browser();
    sign_in_as(&app, &issuer, &erin, "erin").await;
    let server = TestServer::start().await;
    register_server(&app, &alice, "widget", &server.url, true).await;
    grant(&app, &alice, "widget", "alice@example.com").await;
    grant(&app, &alice, "widget", "erin@corp.test").await;
    set_policy(&app, &alice, "widget", "ask").await;
    let arguments = json!({"text": "mine"});

    let token = approve(&app, &alice, "widget", "write-note", arguments.clone()).await;
    let (status, body) = call(
        &app,
        &erin,
        "widget",
        "write-note",
        arguments.clone(),
        Some(&token),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": NOT_MATCHING})));
    assert_eq!(calls_of(&server, "write-note").await, 0, "nothing ran");

    // Still unspent: its own person's call runs.
    let (status, body) = call(
        &app,
        &alice,
        "widget",
        "write-note",
        arguments,
        Some(&token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(calls_of(&server, "write-note").await, 1);
}

#[sqlx::test(migrations = false)]
async fn one_approval_used_by_many_calls_at_once_runs_upstream_at_most_once(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let arguments = json!({"text": "once"});
    let token = approve(
        &app,
        &admin.client,
        "widget",
        "write-note",
        arguments.clone(),
    )
    .await;

    let calls = (0..8).map(|_| {
        call(
            &app,
            &admin.client,
            "widget",
            "write-note",
            arguments.clone(),
            Some(&token),
        )
    });
    let answers = futures::future::join_all(calls).await;
    let ran = answers.iter().filter(|(status, _)| *status == 200).count();
    assert_eq!(ran, 1, "{answers:?}");
    for (status, body) in answers.iter().filter(|(status, _)| *status != 200) {
        assert_eq!((*status, body.clone()), (403, json!({"error": USED})));
    }
    assert_eq!(calls_of(&server, "write-note").await, 1);
    assert_eq!(audited(&app.pool, "approval_used").await.len(), 1);
}
