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

#[sqlx::test(migrations = false)]
async fn the_local_admin_is_entitled_to_every_enabled_server_the_file_declares(pool: PgPool) {
    let file = "[[servers]]\nslug = \"notes\"\ndisplay_name = \"Notes\"\ncommand = [\"true\"]\ncapabilities = [\"tools\"]\n\n\
                [[servers]]\nslug = \"off\"\ncommand = [\"true\"]\ncapabilities = [\"tools\"]\nenabled = false\n";
    let app = spawn_app_with_file(pool, file, &[("STRAD_DISCOVERY_INTERVAL_SECONDS", "0")]).await;
    let browser = app.new_browser();
    sign_in_locally(&app, &browser).await;
    let home = home_page(&app, &browser).await;
    assert!(
        home.contains(r#"data-slug="notes""#),
        "a declared server is on the home page"
    );
    assert!(
        !home.contains(r#"data-slug="off""#),
        "a disabled one is not"
    );

    let grants: Vec<(String, Option<String>)> =
        sqlx::query_as("SELECT slug, email FROM entitlements ORDER BY slug")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        grants,
        [("notes".to_owned(), Some("admin@localhost".to_owned()))]
    );
    let audited: Vec<(Option<String>, serde_json::Value)> =
        sqlx::query_as("SELECT slug, payload FROM audit_log WHERE kind = 'entitlement_granted'")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(audited.len(), 1);
    assert_eq!(audited[0].0.as_deref(), Some("notes"));
    assert_eq!(audited[0].1["reason"], "local mode: declared in the file");

    // Signing in again grants nothing new and audits nothing more.
    let again = app.new_browser();
    sign_in_locally(&app, &again).await;
    let count: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'entitlement_granted'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(count, 1);
}

#[sqlx::test(migrations = false)]
async fn an_admin_with_no_server_is_told_what_to_do_next(pool: PgPool) {
    let app = spawn_app(pool).await;
    let browser = app.new_browser();
    sign_in_locally(&app, &browser).await;
    let home = home_page(&app, &browser).await;
    assert!(home.contains(r#"data-testid="no-servers""#));
    assert!(home.contains(r#"href="/admin/servers""#));
    assert!(home.contains(r#"href="/admin/entitlements""#));
}
