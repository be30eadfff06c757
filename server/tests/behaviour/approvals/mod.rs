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

mod approving;
mod who_may_approve;

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

/// strad in local mode with the test server as `widget` (tools and apps approved), granted
/// to the admin under the `ask` rule; the admin's browser.
async fn setup(pool: PgPool) -> (TestApp, Browser, TestServer) {
    let app = spawn_app(pool).await;
    let admin = local_browser(&app).await;
    let server = widget_granted_to_admin(&app, &admin.client).await;
    set_policy(&app, &admin.client, "widget", "ask").await;
    (app, admin, server)
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
    let response = post_from_console(app, browser, &path, body).await;
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
    let response = post_from_console(app, browser, &format!("/apps/{slug}/approvals"), body).await;
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
