//! Writes come from the console only, and never from a token session (SPEC §3): every
//! request but GET and HEAD passes the write gate; a token session ends with its token; every
//! session has an absolute lifetime; cookies and caching.

use crate::support::*;
use serde_json::{Value, json};
use sqlx::PgPool;

/// Every table a write could change (the audit log and sessions aside), as one text.
async fn everything(pool: &PgPool) -> String {
    let mut all = String::new();
    for table in [
        "users",
        "user_roles",
        "servers",
        "server_items",
        "entitlements",
        "tool_policies",
        "read_only_marks",
        "login_tokens",
        "pins",
    ] {
        let rows: Option<String> = sqlx::query_scalar(&format!(
            "SELECT string_agg(t::text, '\n' ORDER BY t::text) FROM {table} t"
        ))
        .fetch_one(pool)
        .await
        .unwrap();
        all.push_str(&format!("{table}:\n{}\n", rows.unwrap_or_default()));
    }
    all
}

/// A console with a server the admin is entitled to, the admin's browser, and a browser in
/// a token session of the same admin.
async fn admin_and_viewer(app: &TestApp) -> (reqwest::Client, reqwest::Client, String) {
    let admin = signed_in_admin(app).await;
    register_server(app, &admin, "clock", "http://127.0.0.1:9/mcp", true).await;
    let granted = server_fn(
        app,
        &admin,
        "entitlements/grant",
        &[("slug", "clock"), ("grantee", "admin@localhost")],
    )
    .await;
    assert!(granted.status().is_success(), "{}", granted.status());
    let (viewer, token_id) = viewer_of(app, &admin).await;
    (admin, viewer, token_id)
}

/// A browser in a token session of `admin`'s, and the token's id.
async fn viewer_of(app: &TestApp, admin: &reqwest::Client) -> (reqwest::Client, String) {
    let minted: Value = server_fn(app, admin, "tokens/mint", &[("name", "t"), ("days", "1")])
        .await
        .json()
        .await
        .unwrap();
    let token_id = minted["token"]["id"].as_str().unwrap().to_owned();
    let viewer = app.new_browser();
    let response = viewer
        .get(app.url(&format!("/?token={}", minted["secret"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let me: Value = server_fn(app, &viewer, "me", &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(me["token_session"], true);
    (viewer, token_id)
}

/// Plausible arguments for each writing server function, so that nothing but the gate
/// could refuse it.
fn arguments(path: &str) -> Vec<(&'static str, &'static str)> {
    match path {
        "/api/roles/set" => vec![
            ("email", "admin@localhost"),
            ("role", "auditor"),
            ("granted", "false"),
        ],
        "/api/entitlements/grant" => vec![("slug", "clock"), ("grantee", "mallory@example.com")],
        "/api/servers/register" => vec![
            ("slug", "evil"),
            ("display_name", "Evil"),
            ("url", "http://127.0.0.1:9/mcp"),
        ],
        "/api/servers/update" => vec![
            ("slug", "clock"),
            ("display_name", "Changed"),
            ("url", "http://127.0.0.1:8/mcp"),
        ],
        "/api/tokens/mint" => vec![("name", "more"), ("days", "1")],
        "/api/policy/set" => vec![("slug", "clock"), ("writing_from_apps", "ask")],
        "/api/policy/mark" => vec![("slug", "clock"), ("tool", "t"), ("read_only", "true")],
        _ => vec![("slug", "clock")],
    }
}

#[sqlx::test(migrations = false)]
async fn every_write_from_a_token_session_is_refused_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (_admin, viewer, _) = admin_and_viewer(&app).await;
    let before = everything(&app.pool).await;
    // Every writing server function, as registered, and every other route that writes; and
    // a path nothing serves yet: the gate stands before routing, so a route added later is
    // gated too.
    let mut writes = writing_server_fns();
    assert!(
        writes.len() >= 12,
        "the registry lists the writing server functions: {writes:?}"
    );
    writes.extend(
        [
            "/apps/clock/tools/call",
            "/servers/clock/tools/call",
            "/apps/clock/resources/read",
            "/apps/clock/opening-call",
            "/apps/clock/approvals",
            "/apps/clock/host-actions",
            "/apps/clock/download",
            "/apps/clock/log",
            "/api/added-later",
            "/servers/clock",
        ]
        .map(str::to_owned),
    );
    for path in &writes {
        let form = arguments(path);
        let response = viewer
            .post(app.url(path))
            .header("origin", &app.base)
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "POST {path}");
        assert_eq!(
            response.headers()["cache-control"],
            "no-store",
            "POST {path}"
        );
    }
    for method in [reqwest::Method::PUT, reqwest::Method::DELETE] {
        let response = viewer
            .request(method.clone(), app.url("/api/roles/set"))
            .header("origin", &app.base)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{method}");
    }
    assert_eq!(everything(&app.pool).await, before, "nothing changed");
    let refused: Vec<Value> = sqlx::query_scalar(
        "SELECT payload FROM audit_log WHERE kind = 'write_refused' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(refused.len(), writes.len() + 2, "each refusal is audited");
    assert!(refused.iter().all(|p| p["reason"] == "token session"));
    // The token session may still end itself.
    let out = viewer
        .post(app.url("/auth/sign-out"))
        .header("origin", &app.base)
        .send()
        .await
        .unwrap();
    assert_eq!(out.status(), 303);
    assert!(!is_signed_in(&app, &viewer).await);
}

#[sqlx::test(migrations = false)]
async fn a_token_session_sees_the_console_but_pins_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, viewer, _) = admin_and_viewer(&app).await;
    // A live app server, so that an open that pins would succeed.
    let server = crate::support::mcp::TestServer::start().await;
    register_server(&app, &admin, "widget", &server.url, true).await;
    let granted = server_fn(
        &app,
        &admin,
        "entitlements/grant",
        &[("slug", "widget"), ("grantee", "admin@localhost")],
    )
    .await;
    assert!(granted.status().is_success());
    app.caught_up().await;
    let before = everything(&app.pool).await;
    for path in ["/", "/tokens", "/servers/widget", "/apps/widget", "/audit"] {
        let status = viewer.get(app.url(path)).send().await.unwrap().status();
        assert!(status.is_success(), "GET {path}: {status}");
    }
    let listed = server_fn(&app, &viewer, "playground/tools", &[("slug", "widget")]).await;
    assert_eq!(listed.status(), 200);
    assert_eq!(everything(&app.pool).await, before, "no pin, no change");
    // The admin's own browser session pins on first open, as it should.
    let page = admin.get(app.url("/apps/widget")).send().await.unwrap();
    assert!(page.status().is_success());
    let pins: i64 = sqlx::query_scalar("SELECT count(*) FROM pins")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(pins, 1);
}

#[sqlx::test(migrations = false)]
async fn writes_from_another_origin_are_refused_whoever_sends_them(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let before = everything(&app.pool).await;
    // Another port of the same host is the same site: its form posts carry the cookie.
    let elsewhere = app
        .base
        .rsplit_once(':')
        .map(|(host, _)| format!("{host}:1"))
        .unwrap();
    for headers in [
        vec![
            ("origin", elsewhere.as_str()),
            ("sec-fetch-site", "same-site"),
        ],
        vec![
            ("origin", "http://localhost:3000"),
            ("sec-fetch-site", "cross-site"),
        ],
        vec![("origin", "null")],
        vec![("sec-fetch-site", "same-site")],
        vec![("sec-fetch-site", "none")],
    ] {
        for path in [
            "/api/roles/set",
            "/api/entitlements/grant",
            "/api/servers/register",
            "/apps/clock/tools/call",
            "/auth/sign-out",
        ] {
            let mut request = admin.post(app.url(path)).form(&arguments(path));
            for (name, value) in &headers {
                request = request.header(*name, *value);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 403, "POST {path} with {headers:?}");
        }
    }
    assert_eq!(everything(&app.pool).await, before, "nothing changed");
    assert!(is_signed_in(&app, &admin).await);
    // The console's own request, by its Origin, passes.
    let registered = admin
        .post(app.url("/api/servers/register"))
        .header("origin", &app.base)
        .header("sec-fetch-site", "same-origin")
        .form(&arguments("/api/servers/register"))
        .send()
        .await
        .unwrap();
    assert!(registered.status().is_success(), "{}", registered.status());
}

#[sqlx::test(migrations = false)]
async fn a_token_session_ends_when_its_token_is_revoked_or_expires(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (admin, viewer, token_id) = admin_and_viewer(&app).await;
    assert!(is_signed_in(&app, &viewer).await);
    let revoked = server_fn(&app, &admin, "tokens/revoke", &[("id", &token_id)]).await;
    assert!(revoked.status().is_success(), "{}", revoked.status());
    app.caught_up().await;
    let me: Value = server_fn(&app, &viewer, "me", &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(me, Value::Null, "the session ended with its token");
    assert_eq!(session_rows(&app.pool).await, 1, "the admin's only");

    // Expiry ends it the same way.
    let (viewer, _) = viewer_of(&app, &admin).await;
    sqlx::query(
        "UPDATE login_tokens SET expires_at = now() - interval '1 second' WHERE revoked_at IS NULL",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    app.caught_up().await;
    assert!(!is_signed_in(&app, &viewer).await);
}

/// Moves the end of every stored session's life to `ends_at` (Unix seconds).
async fn set_session_end(app: &TestApp, ends_at: i64) {
    let rows: Vec<(String, Vec<u8>)> =
        sqlx::query_as("SELECT id, data FROM tower_sessions.session")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    for (id, data) in rows {
        let mut record: tower_sessions::session::Record = rmp_serde::from_slice(&data).unwrap();
        if let Some(person) = record.data.get_mut("strad.person") {
            person["ends_at"] = json!(ends_at);
        }
        sqlx::query("UPDATE tower_sessions.session SET data = $1 WHERE id = $2")
            .bind(rmp_serde::to_vec(&record).unwrap())
            .bind(id)
            .execute(&app.pool)
            .await
            .unwrap();
    }
    app.caught_up().await;
}

#[sqlx::test(migrations = false)]
async fn a_session_ends_at_its_absolute_lifetime_however_active(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_SESSION_MAX_HOURS", "2")]).await;
    sign_in_locally(&app, &app.client).await;
    let stored: Vec<u8> = sqlx::query_scalar("SELECT data FROM tower_sessions.session")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let record: tower_sessions::session::Record = rmp_serde::from_slice(&stored).unwrap();
    let ends_at = record.data["strad.person"]["ends_at"].as_i64().unwrap();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    assert!(
        (now + 2 * 3600 - 60..=now + 2 * 3600).contains(&ends_at),
        "two hours from sign-in: {ends_at} at {now}"
    );
    assert!(is_signed_in(&app, &app.client).await);
    set_session_end(&app, now - 1).await;
    assert!(!is_signed_in(&app, &app.client).await);
    assert_eq!(session_rows(&app.pool).await, 0, "and its row is deleted");
}

#[sqlx::test(migrations = false)]
async fn answers_are_never_cached_but_the_compiled_site(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    for path in ["/", "/tokens", "/api/me", "/api/tokens/mine", "/sign-in"] {
        let response = admin.get(app.url(path)).send().await.unwrap();
        assert_eq!(
            response
                .headers()
                .get("cache-control")
                .map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "GET {path}"
        );
    }
    let minted = server_fn(&app, &admin, "tokens/mint", &[("name", "t"), ("days", "1")]).await;
    assert_eq!(minted.headers()["cache-control"], "no-store");
    let asset = admin.get(app.url("/pkg/strad.css")).send().await.unwrap();
    assert_ne!(
        asset
            .headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap()),
        Some("no-store")
    );
}

#[sqlx::test(migrations = false)]
async fn over_https_the_session_cookie_is_a_host_only_secure_cookie(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_PUBLIC_URL", "https://127.0.0.1:8443")]).await;
    let link = app.local.as_ref().unwrap().mint();
    let path = link.split_once(":8443").map(|(_, p)| p.to_owned()).unwrap();
    let response = app.client.get(app.url(&path)).send().await.unwrap();
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.contains("strad_session"))
        .expect("a session cookie");
    assert!(cookie.starts_with("__Host-strad_session="), "{cookie}");
    assert!(cookie.contains("Secure"), "{cookie}");
    assert!(cookie.contains("Path=/"), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(!cookie.to_ascii_lowercase().contains("domain="), "{cookie}");
}
