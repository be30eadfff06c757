//! The whole OpenID Connect sign-in against a real issuer (`oidc-provider`), and every way
//! it must refuse: each refusal lands on the sign-in page with its reason and leaves no
//! session behind.

use crate::support::*;
use sqlx::PgPool;

async fn refusal_page(app: &TestApp, client: &reqwest::Client, landed: &str) -> String {
    let response = client.get(app.url(landed)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.text().await.unwrap()
}

#[sqlx::test(migrations = false)]
async fn a_person_signs_in_sees_their_email_and_signs_out(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    assert!(!is_signed_in(&app, &browser).await);

    let landed = sign_in_as(&app, &issuer, &browser, "alice").await;
    assert_eq!(landed, "/");
    let home = home_page(&app, &browser).await;
    assert!(
        home.contains("alice@example.com"),
        "the home page shows the email"
    );
    assert!(
        home.contains("Alice Example"),
        "and the name from the ID token"
    );

    let (issuer_url, subject): (String, String) =
        sqlx::query_as("SELECT issuer, subject FROM users WHERE email = 'alice@example.com'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        (issuer_url.as_str(), subject.as_str()),
        (issuer.url.as_str(), "alice")
    );

    let response = browser
        .post(app.url("/auth/sign-out"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/sign-in");
    assert!(!is_signed_in(&app, &browser).await);
}

#[sqlx::test(migrations = false)]
async fn signing_in_again_is_the_same_person(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    sign_in_as(&app, &issuer, &app.new_browser(), "alice").await;
    sign_in_as(&app, &issuer, &app.new_browser(), "alice").await;
    let people: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(people, 1);
}

#[sqlx::test(migrations = false)]
async fn the_person_returns_to_the_page_they_asked_for_but_never_off_site(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    issuer.next_account("alice").await;
    for (next, expected) in [
        ("%2Fpeople", "/people"),
        ("%2F%2Fevil.example", "/"),
        ("https%3A%2F%2Fevil.example", "/"),
    ] {
        let response = browser
            .get(app.url(&format!("/auth/login?next={next}")))
            .send()
            .await
            .unwrap();
        let callback = callback_url(&app, &browser, &location(&response)).await;
        assert_eq!(finish(&browser, &callback).await, expected, "next={next}");
    }
}

#[sqlx::test(migrations = false)]
async fn a_tampered_state_is_refused_with_no_session(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    issuer.next_account("alice").await;
    let authorize = start_sign_in(&app, &browser).await;
    let callback = callback_url(&app, &browser, &authorize).await;
    let state = query_param(&callback, "state").unwrap();
    let tampered = with_query(&callback, "state", &format!("{state}x"));
    let landed = finish(&browser, &tampered).await;
    assert_eq!(landed, "/sign-in?error=state");
    assert!(
        refusal_page(&app, &browser, &landed)
            .await
            .contains("did not start in this browser")
    );
    assert!(!is_signed_in(&app, &browser).await);
    // The genuine callback no longer works either: the attempt was used up.
    assert_eq!(finish(&browser, &callback).await, "/sign-in?error=state");
    assert!(!is_signed_in(&app, &browser).await);
}

#[sqlx::test(migrations = false)]
async fn a_callback_in_another_browser_is_refused(pool: PgPool) {
    // Login CSRF: an attacker's code and state delivered to the victim's browser.
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let attacker = app.new_browser();
    issuer.next_account("alice").await;
    let authorize = start_sign_in(&app, &attacker).await;
    let callback = callback_url(&app, &attacker, &authorize).await;
    let victim = app.new_browser();
    assert_eq!(finish(&victim, &callback).await, "/sign-in?error=state");
    assert!(!is_signed_in(&app, &victim).await);
}

#[sqlx::test(migrations = false)]
async fn a_forged_callback_leaves_the_signed_in_person_signed_in(pool: PgPool) {
    // A link to the callback from anywhere must not sign the person out, with or without a
    // sign-in the link first started in their browser.
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    assert_eq!(sign_in_as(&app, &issuer, &browser, "alice").await, "/");
    let forged = app.url("/auth/callback?code=x&state=y");
    assert_eq!(finish(&browser, &forged).await, "/sign-in?error=state");
    assert!(is_signed_in(&app, &browser).await, "no sign-in in progress");

    start_sign_in(&app, &browser).await;
    assert_eq!(finish(&browser, &forged).await, "/sign-in?error=state");
    assert!(is_signed_in(&app, &browser).await, "a sign-in in progress");
    assert!(
        home_page(&app, &browser)
            .await
            .contains("alice@example.com")
    );
}

#[sqlx::test(migrations = false)]
async fn a_replayed_callback_is_refused(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    issuer.next_account("alice").await;
    let authorize = start_sign_in(&app, &browser).await;
    let callback = callback_url(&app, &browser, &authorize).await;
    assert_eq!(finish(&browser, &callback).await, "/");
    // The same URL again, from a fresh browser that has just started its own sign-in.
    let replayer = app.new_browser();
    start_sign_in(&app, &replayer).await;
    assert_eq!(finish(&replayer, &callback).await, "/sign-in?error=state");
    assert!(!is_signed_in(&app, &replayer).await);
}

#[sqlx::test(migrations = false)]
async fn a_replayed_code_is_refused_by_the_issuer(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    issuer.next_account("alice").await;
    let first = callback_url(&app, &browser, &start_sign_in(&app, &browser).await).await;
    let used_code = query_param(&first, "code").unwrap();
    assert_eq!(finish(&browser, &first).await, "/");

    // A new sign-in in a new browser, but carrying the code that was already redeemed:
    // the state matches this browser, so it is the issuer that must refuse the code.
    let replayer = app.new_browser();
    let second = callback_url(&app, &replayer, &start_sign_in(&app, &replayer).await).await;
    let replay = with_query(&second, "code", &used_code);
    let landed = finish(&replayer, &replay).await;
    assert_eq!(landed, "/sign-in?error=exchange");
    assert!(
        refusal_page(&app, &replayer, &landed)
            .await
            .contains("did not accept this sign-in")
    );
    assert!(!is_signed_in(&app, &replayer).await);
}

#[sqlx::test(migrations = false)]
async fn a_wrong_nonce_is_refused(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    issuer.next_account("alice").await;
    let authorize = start_sign_in(&app, &browser).await;
    // The ID token will carry a nonce this browser's sign-in never sent.
    let tampered = with_query(&authorize, "nonce", "not-the-nonce-strad-sent");
    let callback = callback_url(&app, &browser, &tampered).await;
    let landed = finish(&browser, &callback).await;
    assert_eq!(landed, "/sign-in?error=nonce");
    assert!(
        refusal_page(&app, &browser, &landed)
            .await
            .contains("does not belong to this sign-in")
    );
    assert!(!is_signed_in(&app, &browser).await);
}

#[sqlx::test(migrations = false)]
async fn an_unverified_email_is_refused(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    let landed = sign_in_as(&app, &issuer, &browser, "bob").await;
    assert_eq!(landed, "/sign-in?error=unverified");
    assert!(
        refusal_page(&app, &browser, &landed)
            .await
            .contains("has not verified your email")
    );
    assert!(!is_signed_in(&app, &browser).await);
    let people: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(people, 0, "a refused person is not recorded");
}

#[sqlx::test(migrations = false)]
async fn a_disallowed_domain_is_refused(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    let landed = sign_in_as(&app, &issuer, &browser, "carol").await;
    assert_eq!(landed, "/sign-in?error=domain");
    assert!(
        refusal_page(&app, &browser, &landed)
            .await
            .contains("email domain may not sign in")
    );
    assert!(!is_signed_in(&app, &browser).await);
}

#[sqlx::test(migrations = false)]
async fn with_the_hosted_domain_required_only_workspace_accounts_sign_in(pool: PgPool) {
    let (app, issuer) =
        spawn_app_with_issuer(pool, &[("STRAD_OIDC_REQUIRE_HOSTED_DOMAIN", "true")]).await;
    let frank = app.new_browser();
    assert_eq!(
        sign_in_as(&app, &issuer, &frank, "frank").await,
        "/sign-in?error=domain"
    );
    assert!(!is_signed_in(&app, &frank).await);
    let erin = app.new_browser();
    assert_eq!(sign_in_as(&app, &issuer, &erin, "erin").await, "/");
    assert!(home_page(&app, &erin).await.contains("erin@corp.test"));
}

#[sqlx::test(migrations = false)]
async fn an_error_from_the_issuer_is_refused(pool: PgPool) {
    let (app, _issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    let authorize = start_sign_in(&app, &browser).await;
    let state = query_param(&authorize, "state").unwrap();
    let callback = app.url(&format!("/auth/callback?error=access_denied&state={state}"));
    assert_eq!(finish(&browser, &callback).await, "/sign-in?error=denied");
    assert!(!is_signed_in(&app, &browser).await);
}

#[sqlx::test(migrations = false)]
async fn the_sign_in_request_uses_pkce_state_and_nonce(pool: PgPool) {
    let (app, _issuer) = spawn_app_with_issuer(pool, &[]).await;
    let authorize = start_sign_in(&app, &app.new_browser()).await;
    assert_eq!(
        query_param(&authorize, "code_challenge_method").as_deref(),
        Some("S256")
    );
    for key in ["code_challenge", "state", "nonce"] {
        assert!(
            query_param(&authorize, key).is_some_and(|v| v.len() >= 22),
            "{key}"
        );
    }
    assert_eq!(
        query_param(&authorize, "response_type").as_deref(),
        Some("code")
    );
    let scope = query_param(&authorize, "scope").unwrap();
    assert!(
        scope.contains("openid") && scope.contains("email"),
        "{scope}"
    );
}

#[sqlx::test(migrations = false)]
async fn a_bootstrap_admin_gets_the_admin_role_at_sign_in(pool: PgPool) {
    let (app, issuer) =
        spawn_app_with_issuer(pool, &[("STRAD_BOOTSTRAP_ADMINS", "Erin@corp.test")]).await;
    let erin = app.new_browser();
    sign_in_as(&app, &issuer, &erin, "erin").await;
    let alice = app.new_browser();
    sign_in_as(&app, &issuer, &alice, "alice").await;

    assert_eq!(
        erin.get(app.url("/people")).send().await.unwrap().status(),
        200
    );
    assert_eq!(
        alice.get(app.url("/people")).send().await.unwrap().status(),
        403
    );
    let roles: Vec<String> = sqlx::query_scalar(
        "SELECT r.role FROM user_roles r JOIN users u ON u.id = r.user_id
         WHERE u.email = 'erin@corp.test' ORDER BY r.role",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(roles, ["admin", "member"]);
}
