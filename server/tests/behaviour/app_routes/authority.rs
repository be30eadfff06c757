//! Where a call's authority comes from: remembered only until it changes, and the approved
//! capabilities a ceiling on every surface.

use super::*;

async fn call_status(app: &TestApp, browser: &reqwest::Client) -> u16 {
    call(app, browser, "widget", json!({"name": "show-widget"}))
        .await
        .status()
        .as_u16()
}

/// What a call's authority is read from is remembered between calls (server/src/memo.rs).
/// A grant or a session ended anywhere — another instance, the command line, by hand in the
/// database — holds for the next call once the change is announced; one ended through this
/// strad holds for the very next call; and while announcements cannot be heard nothing
/// remembered is used.
#[sqlx::test(migrations = false)]
async fn remembered_authority_is_forgotten_as_soon_as_it_changes(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    eventually(10, "the server hears changes", || async {
        app.memos.is_live().then_some(())
    })
    .await;
    // Two calls: the second is answered from memory.
    assert_eq!(call_status(&app, &admin).await, 200);
    assert_eq!(call_status(&app, &admin).await, 200);

    // Elsewhere: the grant is deleted behind this strad's back.
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(call_status(&app, &admin).await, 403);

    // Through this strad: granted again, it holds at once; revoked, it ends at once.
    grant(&app, &admin, "widget", LOCAL_ADMIN).await;
    assert_eq!(call_status(&app, &admin).await, 200);
    assert_eq!(call_status(&app, &admin).await, 200);
    let entitlement: i64 = sqlx::query_scalar("SELECT id FROM entitlements")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let revoked = server_fn(
        &app,
        &admin,
        "entitlements/revoke",
        &[("id", entitlement.to_string().as_str())],
    )
    .await;
    assert_eq!(revoked.status(), 200);
    assert_eq!(call_status(&app, &admin).await, 403);

    // A session ended elsewhere (another instance signed the person out).
    grant(&app, &admin, "widget", LOCAL_ADMIN).await;
    assert_eq!(call_status(&app, &admin).await, 200);
    sqlx::query("DELETE FROM tower_sessions.session")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(call_status(&app, &admin).await, 401);

    // The listener's connection is lost, and a grant ends while nobody listens: what was
    // remembered is not used past the reconnection.
    let admin = signed_in_admin(&app).await;
    assert_eq!(call_status(&app, &admin).await, 200);
    assert_eq!(call_status(&app, &admin).await, 200);
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND query ILIKE 'listen%strad_auth%'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(ended, [true], "one listener");
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    eventually(10, "the listener is back", || async {
        app.memos.is_live().then_some(())
    })
    .await;
    app.caught_up().await;
    assert_eq!(call_status(&app, &admin).await, 403);
}

/// How many tools the playground lists of `widget`.
async fn listed(app: &TestApp, browser: &reqwest::Client) -> usize {
    let listed: Value = server_fn(app, browser, "playground/tools", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    listed["tools"].as_array().unwrap().len()
}

/// Approved capabilities are a ceiling on every surface: without `tools` nothing is listed
/// or called from the playground, an app or the opening call; without `apps` there is no
/// app, no app call and no opening call, though the playground still works.
#[sqlx::test(migrations = false)]
async fn approved_capabilities_are_a_ceiling_on_every_surface(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let approve = |capabilities: &'static [&'static str]| {
        let (app, pool) = (&app, app.pool.clone());
        async move {
            sqlx::query("UPDATE servers SET capabilities = $1 WHERE slug = 'widget'")
                .bind(capabilities)
                .execute(&pool)
                .await
                .unwrap();
            app.caught_up().await;
        }
    };
    let show = json!({"name": "show-widget", "arguments": {}});

    assert!(listed(&app, &admin).await > 0);

    approve(&["apps", "resources"]).await;
    assert_eq!(
        listed(&app, &admin).await,
        0,
        "no tool listed without tools"
    );
    assert_eq!(
        call(&app, &admin, "widget", show.clone()).await.status(),
        403
    );
    assert_eq!(
        play(&app, &admin, "widget", show.clone()).await.status(),
        403
    );
    let opening = opening_call(&app, &admin).await;
    assert_eq!(opening.status(), 403);
    assert!(opening.text().await.unwrap().contains("not approved"));

    approve(&["tools"]).await;
    assert!(listed(&app, &admin).await > 0, "the playground lists again");
    assert_eq!(
        play(&app, &admin, "widget", show.clone()).await.status(),
        200
    );
    assert_eq!(
        call(&app, &admin, "widget", show.clone()).await.status(),
        403
    );
    assert_eq!(opening_call(&app, &admin).await.status(), 403);
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["status"], "NoApp");
    assert_eq!(view["ticket"], Value::Null);

    assert_eq!(
        calls_of(&server, "show-widget").await,
        1,
        "the playground's one"
    );
    let outcomes = audit_outcomes(&app.pool, "app_tool_call").await;
    assert_eq!(outcomes.len(), 4, "every refusal audited: {outcomes:?}");
    assert!(
        outcomes.iter().all(|o| o == "refused: Refuse(NotApproved)"),
        "{outcomes:?}"
    );
}
