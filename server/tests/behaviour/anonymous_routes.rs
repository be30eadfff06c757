//! Every route answers an anonymous request with 401 or a redirect to sign-in, never a
//! 500; public routes answer as they should; security headers are on every response.

use crate::support::*;
use sqlx::PgPool;

#[sqlx::test(migrations = false)]
async fn protected_pages_redirect_anonymous_visitors_to_sign_in(pool: PgPool) {
    let app = spawn_app(pool).await;
    for (path, next) in [
        ("/", "%2F"),
        ("/people", "%2Fpeople"),
        ("/people?x=1", "%2Fpeople%3Fx%3D1"),
    ] {
        let response = app.get(path).await;
        assert_eq!(response.status(), 302, "{path}");
        assert_eq!(
            location(&response),
            format!("/sign-in?next={next}"),
            "{path}"
        );
    }
}

#[sqlx::test(migrations = false)]
async fn server_functions_answer_anonymous_callers_with_401(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.client.get(app.url("/api/people")).send().await.unwrap();
    assert_eq!(response.status(), 401);
    let body = response.text().await.unwrap();
    assert!(body.contains("Unauthorized"), "{body}");
    // Public by design: who is signed in (nobody) and how to sign in.
    let response = app.client.get(app.url("/api/me")).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.text().await.unwrap(), "null");
    let response = app
        .client
        .get(app.url("/api/sign-in-options"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[sqlx::test(migrations = false)]
async fn a_member_without_the_admin_role_gets_403(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    sqlx::query("DELETE FROM user_roles WHERE role <> 'member'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let page = app.get("/people").await;
    assert_eq!(page.status(), 403);
    assert!(page.text().await.unwrap().contains("No access"));
    let api = app.client.get(app.url("/api/people")).send().await.unwrap();
    assert_eq!(api.status(), 403);
}

#[sqlx::test(migrations = false)]
async fn no_route_answers_an_anonymous_request_with_a_server_error(pool: PgPool) {
    let app = spawn_app(pool).await;
    let gets = [
        "/",
        "/sign-in",
        "/sign-in?error=state",
        "/sign-in?error=%3Cscript%3E",
        "/people",
        "/nowhere",
        "/pkg/strad.js",
        "/auth/login",
        "/auth/callback",
        "/auth/callback?code=a&state=b",
        "/auth/local",
        "/auth/sign-out",
        "/healthz",
        "/readyz",
        "/api/me",
        "/api/people",
        "/api/nope",
        "/audit",
        "/tokens",
        "/admin/entitlements",
        "/admin/tokens",
        "/admin/servers",
        "/admin/servers/x/policy",
        "/audit/app-changes",
        "/audit/export.csv",
        "/audit/export.json",
        "/audit/export.csv?since=nonsense",
        "/?token=strad_x",
        "/apps/x/frame/0123456789abcdef0123456789abcdef",
        "/apps/x/tools/call",
    ];
    for path in gets {
        let status = app.get(path).await.status().as_u16();
        assert!(status < 500, "GET {path} answered {status}");
        assert!(
            matches!(status, 200 | 302 | 303 | 400 | 401 | 404 | 405),
            "GET {path}: {status}"
        );
    }
    let posts = [
        "/apps/x/tools/call",
        "/apps/x/host-actions",
        "/apps/x/download",
        "/apps/x/log",
        "/auth/sign-out",
        "/api/me",
        "/api/people",
        "/api/sign-in-options",
        "/api/nope",
        "/",
    ];
    for path in posts {
        let status = app
            .client
            .post(app.url(path))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        assert!(status < 500, "POST {path} answered {status}");
    }
}

#[sqlx::test(migrations = false)]
async fn unknown_paths_are_404_pages(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.get("/no/such/page").await;
    assert_eq!(response.status(), 404);
    assert!(response.text().await.unwrap().contains("Not found"));
}

#[sqlx::test(migrations = false)]
async fn the_sign_in_page_shows_only_known_messages(pool: PgPool) {
    let app = spawn_app(pool).await;
    let page = app
        .get("/sign-in?error=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
        .await
        .text()
        .await
        .unwrap();
    assert!(!page.contains("<script>alert"));
    assert!(
        !page.contains("sign-in-error"),
        "an unknown code shows no message"
    );
    let page = app.get("/sign-in?error=domain").await.text().await.unwrap();
    assert!(page.contains("email domain may not sign in"));
}

#[sqlx::test(migrations = false)]
async fn health_and_readiness_answer(pool: PgPool) {
    let app = spawn_app(pool).await;
    assert_eq!(app.get("/healthz").await.status(), 200);
    assert_eq!(app.get("/readyz").await.status(), 200);
    sqlx::query("DELETE FROM _sqlx_migrations")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        app.get("/readyz").await.status(),
        503,
        "not ready until migrated"
    );
    assert_eq!(
        app.get("/healthz").await.status(),
        200,
        "but the process is up"
    );
}

#[sqlx::test(migrations = false)]
async fn every_response_forbids_framing_and_sniffing(pool: PgPool) {
    let app = spawn_app(pool).await;
    for path in ["/", "/sign-in", "/healthz", "/nowhere"] {
        let response = app.get(path).await;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        assert!(
            header("content-security-policy")
                .unwrap()
                .contains("frame-ancestors 'none'"),
            "{path}"
        );
        assert_eq!(header("x-frame-options").as_deref(), Some("DENY"), "{path}");
        assert_eq!(
            header("x-content-type-options").as_deref(),
            Some("nosniff"),
            "{path}"
        );
    }
}

#[sqlx::test(migrations = false)]
async fn the_server_stops_gracefully(pool: PgPool) {
    let app = spawn_app(pool).await;
    assert_eq!(app.get("/healthz").await.status(), 200);
    app.shut_down().await.expect("a clean stop");
}

/// The console's pages run only their own scripts: the policy names this response's nonce,
/// every script element carries it, and each response has a nonce of its own.
#[sqlx::test(migrations = false)]
async fn console_pages_allow_only_scripts_with_their_own_nonce(pool: PgPool) {
    let app = spawn_app(pool).await;
    let mut nonces = Vec::new();
    for _ in 0..2 {
        let response = app.get("/sign-in").await;
        assert_eq!(response.status(), 200);
        let csp = response.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .to_owned();
        let page = response.text().await.unwrap();
        let nonce = csp
            .split("'nonce-")
            .nth(1)
            .and_then(|rest| rest.split('\'').next())
            .expect("a nonce in the policy")
            .to_owned();
        assert!(csp.starts_with("script-src 'self' 'nonce-"), "{csp}");
        assert!(
            csp.contains(&format!("frame-src {}/apps/;", app.base)),
            "console pages frame app frames only: {csp}"
        );
        assert!(!csp.contains("unsafe-inline"), "{csp}");
        let scripts = page.matches("<script").count();
        assert!(scripts > 0, "the hydration script is there");
        assert_eq!(
            page.matches(&format!("nonce=\"{nonce}\"")).count(),
            scripts,
            "every script carries the nonce: {page}"
        );
        nonces.push(nonce);
    }
    assert_ne!(nonces[0], nonces[1], "a nonce is used once");
}
