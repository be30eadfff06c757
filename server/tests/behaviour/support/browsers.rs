//! Browsers signed in to the console, and what they see of it.

use sqlx::PgPool;

use super::TestApp;
use super::oidc::location;

/// Signs in through a local one-time link.
pub async fn sign_in_locally(app: &TestApp, client: &reqwest::Client) {
    let link = app.local.as_ref().expect("local mode").mint();
    let response = client.get(&link).send().await.unwrap();
    assert_eq!(location(&response), "/");
}

/// The body of the console page at `path`; panics unless it is a 200.
pub async fn page(app: &TestApp, client: &reqwest::Client, path: &str) -> String {
    let response = client.get(app.url(path)).send().await.unwrap();
    assert_eq!(response.status(), 200, "{path}");
    response.text().await.unwrap()
}

/// The home page's body; panics unless it is a 200.
pub async fn home_page(app: &TestApp, client: &reqwest::Client) -> String {
    page(app, client, "/").await
}

/// Whether this browser is signed in: the home page renders instead of redirecting.
pub async fn is_signed_in(app: &TestApp, client: &reqwest::Client) -> bool {
    let response = client.get(app.url("/")).send().await.unwrap();
    match response.status().as_u16() {
        200 => true,
        302 | 303 | 307 => {
            assert!(location(&response).starts_with("/sign-in"));
            false
        }
        other => panic!("home answered {other}"),
    }
}

pub async fn session_rows(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM tower_sessions.session")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// A browser signed in as local mode's admin, then left with only `roles` (and member).
pub async fn signed_in_with(app: &TestApp, roles: &[&str]) -> reqwest::Client {
    let browser = app.new_browser();
    sign_in_locally(app, &browser).await;
    sqlx::query("DELETE FROM user_roles WHERE NOT (role = ANY($1)) AND role <> 'member'")
        .bind(roles.iter().map(|r| r.to_string()).collect::<Vec<_>>())
        .execute(&app.pool)
        .await
        .unwrap();
    browser
}

/// A browser signed in as local mode's admin (every role).
pub async fn signed_in_admin(app: &TestApp) -> reqwest::Client {
    let browser = app.new_browser();
    sign_in_locally(app, &browser).await;
    browser
}
