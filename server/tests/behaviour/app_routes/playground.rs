//! The playground's call route: the same locks as an app's, writing tools allowed, every call
//! audited.

use super::*;

/// The playground's call route: the same locks as an app's, the model's side of visibility,
/// writing tools allowed (a person asked by hand), and every call audited.
#[sqlx::test(migrations = false)]
async fn playground_calls_pass_the_same_checks_and_are_audited(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    // What the playground offers: not the app-only tool.
    let listed: Value = server_fn(&app, &admin, "playground/tools", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"show-widget") && names.contains(&"write-note"),
        "{names:?}"
    );
    assert!(!names.contains(&"app-only-refresh"), "{names:?}");
    let widget = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "show-widget")
        .unwrap();
    assert_eq!(widget["app_uri"], "ui://test/widget.html");
    assert_eq!(
        widget["input_schema"]["properties"]["label"]["type"],
        "string"
    );

    let ran = play(
        &app,
        &admin,
        "widget",
        json!({"name": "write-note", "arguments": {"text": "hi"}}),
    )
    .await;
    assert_eq!(ran.status(), 200);
    let refused = play(&app, &admin, "widget", json!({"name": "app-only-refresh"})).await;
    assert_eq!(refused.status(), 403);
    assert!(refused.text().await.unwrap().contains("for apps only"));
    assert_eq!(
        play(&app, &admin, "widget", json!({"name": "no-such-tool"}))
            .await
            .status(),
        403
    );
    assert_eq!(
        play(&app, &admin, "no-such-slug", json!({"name": "write-note"}))
            .await
            .status(),
        403
    );
    let form = admin
        .post(app.url("/servers/widget/tools/call"))
        .header("origin", &app.base)
        .form(&[("name", "write-note")])
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 415);
    let foreign = admin
        .post(app.url("/servers/widget/tools/call"))
        .header("origin", "https://evil.example")
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"name": "write-note"}))
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);
    assert_eq!(
        play(
            &app,
            &app.new_browser(),
            "widget",
            json!({"name": "write-note"})
        )
        .await
        .status(),
        401
    );
    // A token session may look but not call.
    let minted: Value = server_fn(&app, &admin, "tokens/mint", &[("name", "t"), ("days", "1")])
        .await
        .json()
        .await
        .unwrap();
    let viewer = app.new_browser();
    let signed = viewer
        .get(app.url(&format!("/?token={}", minted["secret"].as_str().unwrap())))
        .send()
        .await
        .unwrap();
    assert!(signed.status().is_redirection() || signed.status().is_success());
    let listed: Value = server_fn(&app, &viewer, "playground/tools", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["view_only"], true);
    let by_token = play(&app, &viewer, "widget", json!({"name": "write-note"})).await;
    assert_eq!(by_token.status(), 403);
    assert!(by_token.text().await.unwrap().contains("login token"));

    assert_eq!(calls_of(&server, "write-note").await, 1);
    assert_eq!(calls_of(&server, "app-only-refresh").await, 0);
    let audited: Vec<(String, Value)> = sqlx::query_as(
        "SELECT kind, payload FROM audit_log WHERE kind = 'playground_tool_call' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let outcomes: Vec<&str> = audited
        .iter()
        .map(|(_, p)| p["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes[0], "ok");
    assert!(audited.iter().all(|(_, p)| p["surface"] == "playground"));
    assert_eq!(
        audited.len(),
        3,
        "run, app-only, unknown (the token session's call is the write gate's): {outcomes:?}"
    );
}
