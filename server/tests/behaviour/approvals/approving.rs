//! A writing tool under `ask` runs once its very call is approved, within the approval's
//! lifetime; a decline or a page that stopped waiting runs nothing; all of it audited.

use super::*;

#[sqlx::test(migrations = false)]
async fn a_writing_tool_under_ask_runs_once_and_only_once_it_is_approved(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    let arguments = json!({"text": "hello", "a": [1, {"z": true, "b": null}]});

    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        None,
    )
    .await;
    assert_eq!(status, 428, "{body}");
    assert_eq!(
        body,
        json!({"error": AWAITING, "approval": {"server": "widget", "slug": "widget",
            "tool": "write-note", "title": null, "description": "Writes a note",
            "arguments": arguments}})
    );
    assert_eq!(calls_of(&server, "write-note").await, 0, "nothing ran");

    let (status, granted) = answer(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        "approve",
    )
    .await;
    assert_eq!(status, 200, "{granted}");
    let token = granted["approval"].as_str().unwrap().to_owned();
    let expires_at = granted["expires_at"].as_i64().unwrap();
    assert!((expires_at - now() - 120).abs() <= 2, "lives 120 s");
    let nonce = token.split('.').nth(1).unwrap().to_owned();
    assert_eq!(
        audited(&app.pool, "approval_granted").await,
        vec![
            json!({"tool": "write-note", "arguments_sha256": digest(arguments.clone()),
            "nonce": nonce, "expires_at": expires_at})
        ]
    );

    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        Some(&token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(calls_of(&server, "write-note").await, 1);
    assert_eq!(
        audited(&app.pool, "approval_used").await,
        vec![
            json!({"tool": "write-note", "arguments_sha256": digest(arguments.clone()),
            "nonce": nonce})
        ]
    );

    // The same approval again: a replay.
    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        Some(&token),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": USED})));
    assert_eq!(calls_of(&server, "write-note").await, 1, "nothing more ran");
    assert_eq!(audited(&app.pool, "approval_used").await.len(), 1);
    assert_eq!(
        app_call_outcomes(&app, 3).await,
        [
            "refused: awaiting approval",
            "ok",
            "refused: approval already used"
        ]
    );
}

#[sqlx::test(migrations = false)]
async fn an_approval_runs_nothing_but_the_very_call_it_was_made_for(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    // Another writing tool of the same server, and the same server as another slug.
    server
        .control(json!({"addTool": {"name": "erase-note", "description": "Erases a note"}}))
        .await;
    refresh_server(&app, browser, "widget").await;
    register_server(&app, browser, "other", &server.url, true).await;
    grant(&app, browser, "other", LOCAL_ADMIN).await;
    set_policy(&app, browser, "other", "ask").await;
    let arguments = json!({"text": "hello"});
    let token = approve(&app, browser, "widget", "write-note", arguments.clone()).await;
    let (_, mac) = token.rsplit_once('.').unwrap();
    let forged = token.replace(mac, &"A".repeat(43));
    let second_session = local_browser(&app).await;

    let attempts: Vec<(&str, &reqwest::Client, &str, &str, Value, String)> = vec![
        (
            "other arguments",
            browser,
            "widget",
            "write-note",
            json!({"text": "bye"}),
            token.clone(),
        ),
        (
            "no arguments",
            browser,
            "widget",
            "write-note",
            json!({}),
            token.clone(),
        ),
        (
            "another tool",
            browser,
            "widget",
            "erase-note",
            arguments.clone(),
            token.clone(),
        ),
        (
            "another slug",
            browser,
            "other",
            "write-note",
            arguments.clone(),
            token.clone(),
        ),
        (
            "another browser session of the same person",
            &second_session.client,
            "widget",
            "write-note",
            arguments.clone(),
            token.clone(),
        ),
        (
            "a forged MAC",
            browser,
            "widget",
            "write-note",
            arguments.clone(),
            forged,
        ),
        (
            "not an approval",
            browser,
            "widget",
            "write-note",
            arguments.clone(),
            "yes".into(),
        ),
    ];
    let tried = attempts.len();
    for (what, client, slug, tool, arguments, approval) in attempts {
        let (status, body) = call(&app, client, slug, tool, arguments, Some(&approval)).await;
        assert_eq!(
            (status, body),
            (403, json!({"error": NOT_MATCHING})),
            "{what}"
        );
    }
    let state = server.state().await.unwrap();
    assert_eq!(
        state["calls"],
        json!({}),
        "nothing reached the server: {state}"
    );
    let outcomes = app_call_outcomes(&app, tried).await;
    assert_eq!(outcomes, vec!["refused: approval does not match"; tried]);
    assert!(audited(&app.pool, "approval_used").await.is_empty());

    // None of them spent it: the call it was made for runs.
    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments,
        Some(&token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(calls_of(&server, "write-note").await, 1);
}

#[sqlx::test(migrations = false)]
async fn an_approval_past_its_lifetime_is_refused_and_its_expiry_audited(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    let arguments = json!({"text": "late"});
    let binding = Binding {
        person: person_id(&app.pool, "admin@localhost").await,
        session: session_binding(&admin.session_id(&app)),
        slug: "widget".into(),
        tool: "write-note".into(),
        arguments_sha256: digest(arguments.clone()),
    };
    let secret = stored_secret(&app.pool).await;
    let late = mint_at(&secret, &binding, now() - 121);

    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        Some(&late.token),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": EXPIRED})));
    assert_eq!(calls_of(&server, "write-note").await, 0, "nothing ran");
    assert_eq!(
        audited(&app.pool, "approval_expired").await,
        vec![
            json!({"tool": "write-note", "arguments_sha256": binding.arguments_sha256,
            "nonce": late.nonce})
        ]
    );
    assert_eq!(
        app_call_outcomes(&app, 1).await,
        ["refused: approval expired"]
    );

    // The same binding minted now is good: the refusal was the expiry's alone.
    let fresh = mint_at(&secret, &binding, now());
    let (status, body) = call(
        &app,
        browser,
        "widget",
        "write-note",
        arguments,
        Some(&fresh.token),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(calls_of(&server, "write-note").await, 1);
}

#[sqlx::test(migrations = false)]
async fn a_decline_and_a_page_that_stopped_waiting_are_audited_and_run_nothing(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    let arguments = json!({"text": "no"});
    let digest = digest(arguments.clone());

    let declined = answer(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        "decline",
    )
    .await;
    assert_eq!(declined, (200, json!({})));
    let gave_up = answer(
        &app,
        browser,
        "widget",
        "write-note",
        arguments.clone(),
        "expired",
    )
    .await;
    assert_eq!(gave_up, (200, json!({})));
    assert_eq!(
        audited(&app.pool, "approval_declined").await,
        vec![json!({"tool": "write-note", "arguments_sha256": digest})]
    );
    assert_eq!(
        audited(&app.pool, "approval_expired").await,
        vec![json!({"tool": "write-note", "arguments_sha256": digest,
            "reason": "the app stopped waiting"})]
    );
    assert!(audited(&app.pool, "approval_granted").await.is_empty());
    assert_eq!(server.state().await.unwrap()["calls"], json!({}));
}
