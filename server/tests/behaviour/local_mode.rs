//! Local mode (no issuer): a one-time link signs in the local admin, once.

use crate::support::*;
use sqlx::PgPool;

#[sqlx::test(migrations = false)]
async fn the_one_time_link_signs_in_the_local_admin_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let link = app.local.as_ref().unwrap().mint();
    assert!(link.starts_with(&app.url("/auth/local?code=")));

    let browser = app.new_browser();
    let response = browser.get(&link).send().await.unwrap();
    assert_eq!(location(&response), "/");
    let home = home_page(&app, &browser).await;
    assert!(home.contains("admin@localhost"));
    for role in ["admin", "auditor", "member"] {
        assert!(
            home.contains(&format!(">{role}<")),
            "role {role} shown in the console bar"
        );
    }

    let other = app.new_browser();
    let response = other.get(&link).send().await.unwrap();
    assert_eq!(location(&response), "/sign-in?error=local-link");
    assert!(!is_signed_in(&app, &other).await);
}

#[sqlx::test(migrations = false)]
async fn a_guessed_or_missing_code_is_refused(pool: PgPool) {
    let app = spawn_app(pool).await;
    app.local.as_ref().unwrap().mint();
    for path in ["/auth/local", "/auth/local?code=", "/auth/local?code=00"] {
        let response = app.get(path).await;
        assert_eq!(location(&response), "/sign-in?error=local-link", "{path}");
    }
    assert!(!is_signed_in(&app, &app.client).await);
}

#[sqlx::test(migrations = false)]
async fn the_sign_in_page_explains_local_mode(pool: PgPool) {
    let app = spawn_app(pool).await;
    let page = app.get("/sign-in").await.text().await.unwrap();
    assert!(page.contains("local mode"));
    assert!(
        !page.contains("/auth/login"),
        "no issuer button in local mode"
    );
}

#[sqlx::test(migrations = false)]
async fn oidc_routes_do_nothing_in_local_mode(pool: PgPool) {
    let app = spawn_app(pool).await;
    for path in ["/auth/login", "/auth/callback?code=x&state=y"] {
        let response = app.get(path).await;
        assert!(response.status().is_redirection());
        assert!(location(&response).starts_with("/sign-in"), "{path}");
    }
}
