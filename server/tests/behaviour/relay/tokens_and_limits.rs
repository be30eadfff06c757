//! Who may use `/mcp` and how much: a valid login token, a request budget per person, and
//! bounds on the sessions a person opens and strad holds.

use super::*;

#[sqlx::test(migrations = false)]
async fn requests_without_a_valid_token_are_refused_with_401(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (token, id) = mint(&app, &admin).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |auth: Option<String>| {
        let mut request = reqwest::Client::new()
            .post(app.url("/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(auth) = auth {
            request = request.header("authorization", auth);
        }
        request.send()
    };
    for auth in [
        None,
        Some("Bearer strad_nope".to_string()),
        Some(format!("Basic {token}")),
    ] {
        let response = post(auth.clone()).await.unwrap();
        assert_eq!(response.status(), 401, "{auth:?}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert!(challenge.starts_with("Bearer "), "{challenge}");
    }
    assert_eq!(
        post(Some(format!("Bearer {token}")))
            .await
            .unwrap()
            .status(),
        200
    );
    // Expired and revoked tokens.
    sqlx::query("UPDATE login_tokens SET expires_at = now() - interval '1 second'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(
        post(Some(format!("Bearer {token}")))
            .await
            .unwrap()
            .status(),
        401
    );
    sqlx::query("UPDATE login_tokens SET expires_at = now() + interval '1 day'")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let revoked = server_fn(&app, &admin, "tokens/revoke", &[("id", id.as_str())]).await;
    assert_eq!(revoked.status(), 200);
    assert_eq!(
        post(Some(format!("Bearer {token}")))
            .await
            .unwrap()
            .status(),
        401
    );
    // A browser session is not a token.
    let cookie_only = admin
        .post(app.url("/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(cookie_only.status(), 401);
    // DNS rebinding: a Host that is not the console's.
    let (fresh, _) = mint(&app, &admin).await;
    let rebound = reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("host", "evil.example")
        .header("authorization", format!("Bearer {fresh}"))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(rebound.status().is_client_error(), "{}", rebound.status());
}

#[sqlx::test(migrations = false)]
async fn a_token_past_its_rate_gets_429_with_retry_after(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_RATE_PER_SECOND", "1")]).await;
    let admin = signed_in_admin(&app).await;
    let (token, _) = mint(&app, &admin).await;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let response = reqwest::Client::new()
            .post(app.url("/mcp"))
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .send()
            .await
            .unwrap();
        if response.status() == 429 {
            assert_eq!(response.headers()["retry-after"], "1");
        }
        statuses.push(response.status().as_u16());
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert!(
        statuses.iter().take(2).all(|s| *s != 429),
        "a burst of two first: {statuses:?}"
    );
}

#[sqlx::test(migrations = false)]
async fn a_person_may_open_only_so_many_sessions_a_minute(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = signed_in_admin(&app).await;
    let (token, _) = mint(&app, &admin).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let post = |body: &Value, session: Option<&str>| {
        let mut request = reqwest::Client::new()
            .post(app.url("/mcp"))
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18");
        }
        request.send()
    };
    let mut opened = Vec::new();
    for _ in 0..10 {
        let response = post(&initialize, None).await.unwrap();
        assert_eq!(response.status(), 200);
        opened.push(
            response.headers()["mcp-session-id"]
                .to_str()
                .unwrap()
                .to_owned(),
        );
    }
    let refused = post(&initialize, None).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "6");
    assert!(refused.text().await.unwrap().contains("new sessions"));
    // Requests in a session already open are not new sessions.
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    let in_session = post(&ping, Some(&opened[0])).await.unwrap();
    assert_ne!(in_session.status(), 429);
    // Another token of the same person shares the budget; another person has their own.
    let (second, _) = mint(&app, &admin).await;
    let bob = another_persons_token(&app).await;
    let open_with = |token: String| {
        reqwest::Client::new()
            .post(app.url("/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
    };
    assert_eq!(open_with(second).await.unwrap().status(), 429);
    assert_eq!(open_with(bob).await.unwrap().status(), 200);
}

/// A login token of a second person (a member, entitled to nothing).
async fn another_persons_token(app: &TestApp) -> String {
    let bob: uuid::Uuid = sqlx::query_scalar(
        "INSERT INTO users (issuer, subject, email) VALUES ('t', 'bob', 'bob@example.com')
         RETURNING id",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    app.caught_up().await;
    let mut tx = app.pool.begin().await.unwrap();
    let (_, secret) =
        app::tokens::ssr::store::mint(&mut tx, bob, "bob's", time::Duration::days(1), 20)
            .await
            .unwrap();
    tx.commit().await.unwrap();
    secret.expose().to_owned()
}

/// The request rate is the person's, not each token's: a second token of theirs finds the
/// budget the first spent, and another person's token has a budget of their own.
#[sqlx::test(migrations = false)]
async fn a_persons_tokens_share_one_request_budget(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_RATE_PER_SECOND", "1")]).await;
    let admin = signed_in_admin(&app).await;
    let (first, _) = mint(&app, &admin).await;
    let (second, _) = mint(&app, &admin).await;
    let bob = another_persons_token(&app).await;
    let ping = |token: &str| {
        reqwest::Client::new()
            .post(app.url("/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .send()
    };
    // The first token spends the burst (two) until it is refused.
    let mut spent = 0;
    while ping(&first).await.unwrap().status() != 429 {
        spent += 1;
        assert!(spent <= 4, "the first token was never refused");
    }
    // Within the second it takes to earn one more, the second token gets at most one.
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let response = ping(&second).await.unwrap();
        if response.status() == 429 {
            assert_eq!(response.headers()["retry-after"], "1");
        }
        statuses.push(response.status().as_u16());
    }
    assert!(statuses.contains(&429), "{statuses:?}");
    assert_ne!(ping(&bob).await.unwrap().status(), 429, "bob has his own");
}

#[sqlx::test(migrations = false)]
async fn past_the_most_sessions_strad_holds_a_new_one_waits_for_a_closed_one(pool: PgPool) {
    let app = spawn_app_with_env(pool, &[("STRAD_MCP_SESSIONS_MAX", "2")]).await;
    let admin = signed_in_admin(&app).await;
    let (token, _) = mint(&app, &admin).await;
    let first = client(&app.url("/mcp"), &token).await.unwrap();
    let _second = client(&app.url("/mcp"), &token).await.unwrap();
    let refused = reqwest::Client::new()
        .post(app.url("/mcp"))
        .header("authorization", format!("Bearer {token}"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "30");
    // A client that ends its session makes room.
    let _ = first.cancel().await;
    eventually(10, "a third session to be accepted", || async {
        client(&app.url("/mcp"), &token).await.ok()
    })
    .await;
}
