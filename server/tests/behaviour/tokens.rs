//! Personal login tokens: minted once, stored hashed, expiring, revocable; `?token=` on a
//! console URL makes a view-only token session.

use crate::support::*;
use serde_json::Value;
use sqlx::PgPool;

async fn mint(app: &TestApp, browser: &reqwest::Client, name: &str) -> (String, String) {
    let response = server_fn(
        app,
        browser,
        "tokens/mint",
        &[("name", name), ("days", "30")],
    )
    .await;
    assert_eq!(response.status(), 200);
    let minted: Value = response.json().await.unwrap();
    (
        minted["secret"].as_str().unwrap().to_owned(),
        minted["token"]["id"].as_str().unwrap().to_owned(),
    )
}

#[sqlx::test(migrations = false)]
async fn a_token_is_shown_once_and_stored_only_as_a_hash(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    let (secret, id) = mint(&app, &app.client, "laptop").await;
    assert!(secret.starts_with("strad_") && secret.len() > 40);
    let stored: Vec<u8> = sqlx::query_scalar("SELECT hash FROM login_tokens WHERE id = $1::uuid")
        .bind(&id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored.len(), 32);
    assert!(!String::from_utf8_lossy(&stored).contains(&secret[6..]));
    let listed = server_fn(&app, &app.client, "tokens/mine", &[])
        .await
        .text()
        .await
        .unwrap();
    assert!(
        listed.contains("laptop") && !listed.contains(&secret),
        "the list never carries the secret"
    );
    let audit: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'token_minted'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(audit, 1);
}

#[sqlx::test(migrations = false)]
async fn a_token_in_the_url_starts_a_view_only_session_and_leaves_the_address(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    let (secret, _) = mint(&app, &app.client, "viewer").await;

    let viewer = app.new_browser();
    let response = viewer
        .get(app.url(&format!("/people?view=week&token={secret}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(
        location(&response),
        "/people?view=week",
        "the token is taken out of the address"
    );
    let me: Value = server_fn(&app, &viewer, "me", &[])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(me["email"], "admin@localhost");
    assert_eq!(me["token_session"], true);
    // A token session cannot mint more tokens.
    assert_eq!(
        server_fn(
            &app,
            &viewer,
            "tokens/mint",
            &[("name", "x"), ("days", "1")]
        )
        .await
        .status(),
        403
    );
    let last_used: Option<time::OffsetDateTime> =
        sqlx::query_scalar("SELECT last_used_at FROM login_tokens")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(last_used.is_some());
}

#[sqlx::test(migrations = false)]
async fn a_token_link_never_redirects_off_the_console(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    let (secret, _) = mint(&app, &app.client, "viewer").await;

    // A browser reads `//evil.example/x` in a Location as another host.
    let viewer = app.new_browser();
    let response = viewer
        .get(app.url(&format!("//evil.example/x?view=week&token={secret}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/", "a good token");
    assert!(is_signed_in(&app, &viewer).await);

    let response = app
        .client
        .get(app.url("//evil.example/x?token=junk"))
        .send()
        .await
        .unwrap();
    assert_eq!(location(&response), "/", "a bad token, signed in");
    assert!(is_signed_in(&app, &app.client).await);
}

#[sqlx::test(migrations = false)]
async fn revoked_expired_unknown_and_cross_site_tokens_are_refused(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    let (revoked, revoked_id) = mint(&app, &app.client, "revoked").await;
    assert_eq!(
        server_fn(
            &app,
            &app.client,
            "tokens/revoke",
            &[("id", revoked_id.as_str())]
        )
        .await
        .status(),
        200
    );
    let (expired, _) = mint(&app, &app.client, "expired").await;
    sqlx::query(
        "UPDATE login_tokens SET expires_at = now() - interval '1 second' WHERE name = 'expired'",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    app.caught_up().await;
    let (good, _) = mint(&app, &app.client, "good").await;

    for token in [
        revoked.as_str(),
        expired.as_str(),
        "strad_not-a-token",
        "garbage",
    ] {
        let browser = app.new_browser();
        let response = browser
            .get(app.url(&format!("/?token={token}")))
            .send()
            .await
            .unwrap();
        assert_eq!(location(&response), "/sign-in?error=login-token", "{token}");
        assert!(!is_signed_in(&app, &browser).await);
    }
    // Someone already signed in keeps their session; the bad token only leaves the address.
    let response = app
        .client
        .get(app.url("/tokens?view=week&token=x"))
        .send()
        .await
        .unwrap();
    assert_eq!(location(&response), "/tokens?view=week");
    assert!(is_signed_in(&app, &app.client).await);
    let browser = app.new_browser();
    let response = browser
        .get(app.url(&format!("/?token={good}")))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(
        location(&response),
        "/sign-in?error=login-token",
        "a token link from another site"
    );
    assert!(!is_signed_in(&app, &browser).await);
}

#[sqlx::test(migrations = false)]
async fn people_revoke_their_own_tokens_and_admins_anyones(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    let (_, admins_token) = mint(&app, &app.client, "admin's").await;

    // A second person (a member only) with a token of their own.
    sqlx::query(
        "INSERT INTO users (issuer, subject, email) VALUES ('t', 'bob', 'bob@example.com')",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    app.caught_up().await;
    let bob_id: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM users WHERE email = 'bob@example.com'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    let mut tx = app.pool.begin().await.unwrap();
    let (_, bob_secret) =
        app::tokens::ssr::store::mint(&mut tx, bob_id, "bob's", time::Duration::days(1), 20)
            .await
            .unwrap();
    tx.commit().await.unwrap();
    let bob = app.new_browser();
    let response = bob
        .get(app.url(&format!("/?token={}", bob_secret.expose())))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    let bobs_token: String =
        sqlx::query_scalar("SELECT id::text FROM login_tokens WHERE user_id = $1")
            .bind(bob_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();

    // Bob's token session cannot revoke the admin's token (it may not write at all).
    assert_eq!(
        server_fn(
            &app,
            &bob,
            "tokens/revoke",
            &[("id", admins_token.as_str())]
        )
        .await
        .status(),
        403
    );
    assert_eq!(server_fn(&app, &bob, "tokens/all", &[]).await.status(), 403);
    // The admin revokes Bob's.
    assert_eq!(
        server_fn(
            &app,
            &app.client,
            "tokens/revoke",
            &[("id", bobs_token.as_str())]
        )
        .await
        .status(),
        200
    );
    let revoked: bool =
        sqlx::query_scalar("SELECT revoked_at IS NOT NULL FROM login_tokens WHERE id = $1::uuid")
            .bind(&bobs_token)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(revoked);
    let kinds: Vec<String> =
        sqlx::query_scalar("SELECT kind FROM audit_log WHERE kind LIKE 'token_%' ORDER BY id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(kinds, ["token_minted", "token_revoked"]);
}

#[sqlx::test(migrations = false)]
async fn bad_token_requests_are_refused_at_the_field(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    for (name, days) in [("", "30"), ("x", "0"), ("x", "366")] {
        assert_eq!(
            server_fn(
                &app,
                &app.client,
                "tokens/mint",
                &[("name", name), ("days", days)]
            )
            .await
            .status(),
            400,
            "{name} {days}"
        );
    }
    assert_eq!(
        server_fn(&app, &app.client, "tokens/revoke", &[("id", "not-a-uuid")])
            .await
            .status(),
        404
    );
}

/// What `tokens/mint` answers when the person already holds as many live tokens as allowed.
fn too_many(limit: u32) -> Value {
    serde_json::json!({"TooManyTokens": {"limit": limit}})
}

async fn live_tokens(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT count(*) FROM login_tokens WHERE revoked_at IS NULL AND expires_at > now()",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[sqlx::test(migrations = false)]
async fn a_person_holds_at_most_the_configured_number_of_live_tokens(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_TOKENS_PER_PERSON", "3")]).await;
    sign_in_locally(&app, &app.client).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(mint(&app, &app.client, &format!("client {n}")).await.1);
    }
    let mint_another = || {
        server_fn(
            &app,
            &app.client,
            "tokens/mint",
            &[("name", "one too many"), ("days", "30")],
        )
    };
    let refused = mint_another().await;
    assert_eq!(refused.status(), 409);
    assert_eq!(refused.json::<Value>().await.unwrap(), too_many(3));
    assert_eq!(live_tokens(&app).await, 3);
    let minted: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'token_minted'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(minted, 3, "a refused mint leaves no audit row");

    // A revoked token no longer counts, nor does an expired one.
    let revoked = server_fn(
        &app,
        &app.client,
        "tokens/revoke",
        &[("id", ids[0].as_str())],
    )
    .await;
    assert_eq!(revoked.status(), 200);
    assert_eq!(mint_another().await.status(), 200);
    assert_eq!(mint_another().await.status(), 409);
    sqlx::query(
        "UPDATE login_tokens SET expires_at = now() - interval '1 second' WHERE id = $1::uuid",
    )
    .bind(&ids[1])
    .execute(&app.pool)
    .await
    .unwrap();
    assert_eq!(mint_another().await.status(), 200);
    assert_eq!(live_tokens(&app).await, 3);
}

#[sqlx::test(migrations = false)]
async fn mints_at_the_same_moment_never_pass_the_limit(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_TOKENS_PER_PERSON", "2")]).await;
    sign_in_locally(&app, &app.client).await;
    let statuses = futures::future::join_all((0..8).map(|n| {
        let name = format!("racer {n}");
        let app = &app;
        async move {
            server_fn(
                app,
                &app.client,
                "tokens/mint",
                &[("name", &name), ("days", "1")],
            )
            .await
            .status()
            .as_u16()
        }
    }))
    .await;
    let mut counts = std::collections::BTreeMap::new();
    for status in statuses {
        *counts.entry(status).or_insert(0) += 1;
    }
    assert_eq!(counts, [(200, 2), (409, 6)].into(), "{counts:?}");
    assert_eq!(live_tokens(&app).await, 2);
}

#[sqlx::test(migrations = false)]
async fn a_person_holds_twenty_live_tokens_unless_configured_otherwise(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    for n in 0..20 {
        mint(&app, &app.client, &format!("client {n}")).await;
    }
    let refused = server_fn(
        &app,
        &app.client,
        "tokens/mint",
        &[("name", "twenty-first"), ("days", "30")],
    )
    .await;
    assert_eq!(refused.status(), 409);
    assert_eq!(refused.json::<Value>().await.unwrap(), too_many(20));
}
