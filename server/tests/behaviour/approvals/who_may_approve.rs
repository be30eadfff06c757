//! Who may approve what: only a call that may run once approved, only from the console, only
//! the person's own approval, used once however many calls carry it.

use super::*;

#[sqlx::test(migrations = false)]
async fn only_a_call_that_may_run_once_approved_can_be_approved(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let browser = &admin.client;
    server.control(json!({"addTool": {"name": "model-only", "annotations": {"readOnlyHint": true}, "_meta": {"ui": {"visibility": ["model"]}}}})).await;
    refresh_server(&app, browser, "widget").await;

    // A read-only tool pressed as an island action runs without an approval: nothing is
    // minted, and the press is on record.
    let (status, body) = answer(&app, browser, "widget", "show-widget", json!({}), "approve").await;
    assert_eq!((status, body), (200, json!({"approval": null})));
    assert_eq!(
        audited(&app.pool, "approval_granted").await,
        vec![json!({"tool": "show-widget", "arguments_sha256": digest(json!({}))})]
    );

    for (tool, message) in [
        ("model-only", "not available to apps"),
        ("no-such-tool", "no such tool"),
    ] {
        let (status, body) = answer(&app, browser, "widget", tool, json!({}), "approve").await;
        assert_eq!(status, 403, "{tool}");
        assert!(
            body["error"].as_str().unwrap().contains(message),
            "{tool}: {body}"
        );
    }
    // Under `deny`, a writing tool is refused, its approval too.
    set_policy(&app, browser, "widget", "deny").await;
    let (status, body) = answer(&app, browser, "widget", "write-note", json!({}), "approve").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("refuses such calls"),
        "{body}"
    );
    assert_eq!(audited(&app.pool, "approval_granted").await.len(), 1);
    assert_eq!(server.state().await.unwrap()["calls"], json!({}));
}

#[sqlx::test(migrations = false)]
async fn the_approvals_route_has_the_locks_of_every_console_write(pool: PgPool) {
    let (app, admin, _server) = setup(pool).await;
    let body = json!({"tool": "write-note", "arguments": {}, "decision": "approve"});
    let url = app.url("/apps/widget/approvals");

    let anonymous = app.new_browser();
    let response =
        post_from_console(&app, &anonymous, "/apps/widget/approvals", body.clone()).await;
    assert_eq!(response.status(), 401);
    let response = admin
        .client
        .post(&url)
        .header("origin", &app.base)
        .header("content-type", "text/plain")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    let response = admin
        .client
        .post(&url)
        .header("origin", "https://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403, "cross-site");
    let response =
        post_from_console(&app, &admin.client, "/apps/nowhere/approvals", body.clone()).await;
    assert_eq!(response.status(), 403, "a slug not granted");
    let malformed = json!({"tool": "write-note", "decision": "maybe"});
    let response =
        post_from_console(&app, &admin.client, "/apps/widget/approvals", malformed).await;
    assert_eq!(response.status(), 400);

    // A session opened with a login token may view, never approve.
    let minted: Value = server_fn(
        &app,
        &admin.client,
        "tokens/mint",
        &[("name", "t"), ("days", "1")],
    )
    .await
    .json()
    .await
    .unwrap();
    let viewer = app.new_browser();
    viewer
        .get(app.url(&format!("/?token={}", minted["secret"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    let response = post_from_console(&app, &viewer, "/apps/widget/approvals", body.clone()).await;
    assert_eq!(response.status(), 403);
    assert!(
        !response.text().await.unwrap().contains("v1."),
        "no approval"
    );
    assert!(audited(&app.pool, "approval_granted").await.is_empty());
}

#[sqlx::test(migrations = false)]
async fn another_person_cannot_use_someone_elses_approval(pool: PgPool) {
    let (app, issuer) =
        spawn_app_with_issuer(pool, &[("STRAD_BOOTSTRAP_ADMINS", "alice@example.com")]).await;
    let alice = app.new_browser();
    sign_in_as(&app, &issuer, &alice, "alice").await;
    let erin = app.new_browser();
    sign_in_as(&app, &issuer, &erin, "erin").await;
    let server = TestServer::start().await;
    register_server(&app, &alice, "widget", &server.url, true).await;
    grant(&app, &alice, "widget", "alice@example.com").await;
    grant(&app, &alice, "widget", "erin@corp.test").await;
    set_policy(&app, &alice, "widget", "ask").await;
    let arguments = json!({"text": "mine"});

    let token = approve(&app, &alice, "widget", "write-note", arguments.clone()).await;
    let (status, body) = call(
        &app,
        &erin,
        "widget",
        "write-note",
        arguments.clone(),
        Some(&token),
    )
    .await;
    assert_eq!((status, body), (403, json!({"error": NOT_MATCHING})));
    assert_eq!(calls_of(&server, "write-note").await, 0, "nothing ran");

    // Still unspent: its own person's call runs.
    let (status, body) = call(
        &app,
        &alice,
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
async fn one_approval_used_by_many_calls_at_once_runs_upstream_at_most_once(pool: PgPool) {
    let (app, admin, server) = setup(pool).await;
    let arguments = json!({"text": "once"});
    let token = approve(
        &app,
        &admin.client,
        "widget",
        "write-note",
        arguments.clone(),
    )
    .await;

    let calls = (0..8).map(|_| {
        call(
            &app,
            &admin.client,
            "widget",
            "write-note",
            arguments.clone(),
            Some(&token),
        )
    });
    let answers = futures::future::join_all(calls).await;
    let ran = answers.iter().filter(|(status, _)| *status == 200).count();
    assert_eq!(ran, 1, "{answers:?}");
    for (status, body) in answers.iter().filter(|(status, _)| *status != 200) {
        assert_eq!((*status, body.clone()), (403, json!({"error": USED})));
    }
    assert_eq!(calls_of(&server, "write-note").await, 1);
    assert_eq!(audited(&app.pool, "approval_used").await.len(), 1);
}
