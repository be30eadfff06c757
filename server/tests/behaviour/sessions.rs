//! Sessions: stored in Postgres, cookie flags, the id cycled at sign-in, expiry, and
//! sign-out deleting the row.

use crate::support::*;
use sqlx::PgPool;

fn session_cookie(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("strad_session=") || v.starts_with("__Host-strad_session="))
        .map(str::to_owned)
}

fn cookie_value(set_cookie: &str) -> String {
    set_cookie
        .split(';')
        .next()
        .unwrap()
        .trim_start_matches("strad_session=")
        .to_owned()
}

#[sqlx::test(migrations = false)]
async fn the_session_cookie_is_httponly_lax_and_not_secure_over_http(pool: PgPool) {
    let app = spawn_app(pool).await;
    let link = app.local.as_ref().unwrap().mint();
    let response = app.client.get(&link).send().await.unwrap();
    let cookie = session_cookie(&response).expect("sign-in sets the session cookie");
    let lower = cookie.to_ascii_lowercase();
    assert!(lower.contains("httponly"), "{cookie}");
    assert!(lower.contains("samesite=lax"), "{cookie}");
    assert!(lower.contains("path=/"), "{cookie}");
    assert!(!lower.contains("secure"), "{cookie}");
    assert!(
        lower.contains("max-age=43200"),
        "the cookie expires after 12 idle hours: {cookie}"
    );
}

#[sqlx::test(migrations = false)]
async fn the_session_cookie_is_secure_when_the_public_url_is_https(pool: PgPool) {
    let (listener, base) = bind().await;
    let https = base.replace("http://", "https://");
    let app = spawn_app_on(
        pool,
        listener,
        base,
        &[("STRAD_PUBLIC_URL", https.as_str())],
    )
    .await;
    let link = app
        .local
        .as_ref()
        .unwrap()
        .mint()
        .replace("https://", "http://");
    let response = app.client.get(&link).send().await.unwrap();
    let cookie = session_cookie(&response).expect("sign-in sets the session cookie");
    assert!(cookie.to_ascii_lowercase().contains("secure"), "{cookie}");
}

#[sqlx::test(migrations = false)]
async fn anonymous_pages_set_no_cookie(pool: PgPool) {
    let app = spawn_app(pool).await;
    for path in ["/", "/sign-in", "/healthz"] {
        let response = app.get(path).await;
        assert!(session_cookie(&response).is_none(), "{path}");
    }
}

#[sqlx::test(migrations = false)]
async fn the_session_id_changes_at_sign_in(pool: PgPool) {
    let (app, issuer) = spawn_app_with_issuer(pool, &[]).await;
    let browser = app.new_browser();
    issuer.next_account("alice").await;
    let response = browser.get(app.url("/auth/login")).send().await.unwrap();
    let before =
        cookie_value(&session_cookie(&response).expect("the pending sign-in has a session"));
    let callback = callback_url(&app, &browser, &location(&response)).await;
    let response = browser.get(&callback).send().await.unwrap();
    let after = cookie_value(&session_cookie(&response).expect("sign-in sets a new cookie"));
    assert_ne!(before, after);

    // The id from before sign-in is worth nothing now.
    let planted = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = planted
        .get(app.url("/"))
        .header("cookie", format!("strad_session={before}"))
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_redirection(),
        "an old session id is anonymous"
    );
    let response = planted
        .get(app.url("/"))
        .header("cookie", format!("strad_session={after}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "the new id is signed in");
}

#[sqlx::test(migrations = false)]
async fn sign_out_deletes_the_session_row(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    assert_eq!(session_rows(&app.pool).await, 1);
    let response = app
        .client
        .post(app.url("/auth/sign-out"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(session_rows(&app.pool).await, 0);
    assert!(!is_signed_in(&app, &app.client).await);
}

#[sqlx::test(migrations = false)]
async fn a_cross_site_sign_out_is_refused(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    for (name, value) in [
        ("sec-fetch-site", "cross-site"),
        ("origin", "https://evil.example"),
    ] {
        let response = app
            .client
            .post(app.url("/auth/sign-out"))
            .header(name, value)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{name}: {value}");
    }
    assert!(is_signed_in(&app, &app.client).await);
}

#[sqlx::test(migrations = false)]
async fn an_expired_session_is_anonymous(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    assert!(is_signed_in(&app, &app.client).await);
    sqlx::query("UPDATE tower_sessions.session SET expiry_date = now() - interval '1 minute'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert!(!is_signed_in(&app, &app.client).await);
}

#[sqlx::test(migrations = false)]
async fn a_session_of_a_deleted_person_is_anonymous(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    sqlx::query("DELETE FROM users")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert!(!is_signed_in(&app, &app.client).await);
}

#[sqlx::test(migrations = false)]
async fn a_revoked_role_takes_effect_on_the_next_request(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    assert_eq!(app.get("/people").await.status(), 200);
    sqlx::query("DELETE FROM user_roles WHERE role = 'admin'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(app.get("/people").await.status(), 403);
}

/// The expiry of the (one) session row.
async fn stored_expiry(pool: &PgPool) -> time::OffsetDateTime {
    sqlx::query_scalar("SELECT max(expiry_date) FROM tower_sessions.session")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Makes every stored session look last extended two minutes ago.
async fn age_the_last_touch(app: &TestApp) {
    let pool = &app.pool;
    let rows: Vec<(String, Vec<u8>)> =
        sqlx::query_as("SELECT id, data FROM tower_sessions.session")
            .fetch_all(pool)
            .await
            .unwrap();
    let long_ago = time::OffsetDateTime::now_utc().unix_timestamp() - 120;
    for (id, data) in rows {
        let mut record: tower_sessions::session::Record = rmp_serde::from_slice(&data).unwrap();
        record
            .data
            .insert("strad.touched".into(), serde_json::json!(long_ago));
        sqlx::query("UPDATE tower_sessions.session SET data = $1 WHERE id = $2")
            .bind(rmp_serde::to_vec(&record).unwrap())
            .bind(id)
            .execute(pool)
            .await
            .unwrap();
    }
    app.caught_up().await;
}

#[sqlx::test(migrations = false)]
async fn activity_keeps_a_session_alive_with_at_most_one_write_a_minute(pool: PgPool) {
    let app = spawn_app(pool).await;
    sign_in_locally(&app, &app.client).await;
    // Near its end, as after a long pause.
    sqlx::query("UPDATE tower_sessions.session SET expiry_date = now() + interval '30 seconds'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let near = stored_expiry(&app.pool).await;
    // Within a minute of the last extension a request writes nothing.
    assert!(is_signed_in(&app, &app.client).await);
    assert_eq!(stored_expiry(&app.pool).await, near);
    // Later, the next request pushes the expiry back by the whole idle time.
    age_the_last_touch(&app).await;
    assert!(is_signed_in(&app, &app.client).await);
    let extended = stored_expiry(&app.pool).await;
    assert!(
        extended > near + time::Duration::minutes(5),
        "{near} → {extended}"
    );
    assert!(is_signed_in(&app, &app.client).await);
    assert_eq!(
        stored_expiry(&app.pool).await,
        extended,
        "and then not again at once"
    );
}
