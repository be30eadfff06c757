//! Frames on a sandbox origin: only the frame route answers there, with no cookie read or
//! set; the console's origin no longer serves frames; a ticket is spent once across every
//! instance on the database.

use super::*;

/// strad in local mode whose frames are served from `http://localhost:<its port>`; the
/// admin's browser, with the widget registered and granted.
async fn spawn_with_sandbox(pool: PgPool) -> (TestApp, reqwest::Client, String) {
    let (listener, base) = bind().await;
    let port = listener.local_addr().unwrap().port();
    let sandbox = format!("localhost:{port}");
    let origin = format!("http://{sandbox}");
    let app = spawn_app_on(pool, listener, base, &[("STRAD_SANDBOX_ORIGIN", &origin)]).await;
    let admin = signed_in_admin(&app).await;
    (app, admin, sandbox)
}

/// Loads a frame as a browser does from another site: on the sandbox host, no cookie.
async fn sandbox_frame(app: &TestApp, host: &str, slug: &str, ticket: &str) -> reqwest::Response {
    client()
        .get(app.url(&format!("/apps/{slug}/frame/{ticket}")))
        .header("host", host)
        .header("sec-fetch-site", "cross-site")
        .header("sec-fetch-dest", "iframe")
        .send()
        .await
        .unwrap()
}

#[sqlx::test(migrations = false)]
async fn the_sandbox_origin_serves_frames_only_and_never_a_cookie(pool: PgPool) {
    let (app, admin, sandbox) = spawn_with_sandbox(pool).await;
    let _server = widget_granted_to_admin(&app, &admin).await;
    let page = admin
        .get(app.url("/apps/widget"))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    let csp = page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains(&format!("frame-src http://{sandbox}/apps/widget/frame/;")),
        "the host page frames the sandbox origin's one path: {csp}"
    );
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["frame_origin"], format!("http://{sandbox}"));
    let ticket = view["ticket"].as_str().unwrap().to_owned();

    // The console's origin serves no frame, even to the signed-in person.
    let on_console = frame_with(&app, &admin, "widget", &ticket).await;
    assert_eq!(on_console.status(), 404);

    let served = sandbox_frame(&app, &sandbox, "widget", &ticket).await;
    let (status, headers) = (served.status(), served.headers().clone());
    let body = served.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(headers.get("set-cookie").is_none());
    assert!(
        headers.get("x-frame-options").is_none(),
        "it cannot name another origin"
    );
    let frame_csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        frame_csp.ends_with(&format!("frame-ancestors {}", app.base)),
        "framed by the console's origin only: {frame_csp}"
    );
    assert!(frame_csp.starts_with("sandbox allow-scripts"));
    assert!(body.contains("<base target=\"_blank\">"));

    let again = sandbox_frame(&app, &sandbox, "widget", &ticket).await;
    assert_eq!(again.status(), 409, "spent");
    assert_eq!(
        again.headers()["content-security-policy"],
        format!(
            "sandbox; default-src 'none'; script-src 'none'; frame-ancestors {}",
            app.base
        )
        .as_str()
    );

    // Everything else there is 404 and sets no cookie, a console cookie sent along or not.
    let cookie = admin.get(app.url("/")).send().await.unwrap();
    assert_eq!(cookie.status(), 200);
    for path in [
        "/",
        "/healthz",
        "/servers",
        "/api/apps/open",
        "/auth/local?t=x",
        "/pkg/strad.js",
        "/apps/widget",
        "/metrics",
    ] {
        let response = admin
            .get(app.url(path))
            .header("host", &sandbox)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "{path}");
        assert!(response.headers().get("set-cookie").is_none(), "{path}");
        assert_eq!(response.headers()["cache-control"], "no-store", "{path}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        assert_eq!(response.headers()["referrer-policy"], "no-referrer");
        assert_eq!(
            response.headers()["content-security-policy"],
            "default-src 'none'; frame-ancestors 'none'",
            "{path}"
        );
        assert!(
            response.text().await.unwrap().contains("app frames only"),
            "{path}"
        );
    }
    // The frame's path answers a browser's GET only: anything else is refused unread.
    for method in [
        reqwest::Method::POST,
        reqwest::Method::PUT,
        reqwest::Method::DELETE,
    ] {
        let response = admin
            .request(method.clone(), app.url("/apps/widget/frame/x"))
            .header("host", &sandbox)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method}");
        assert!(response.headers().get("set-cookie").is_none());
        assert_eq!(response.headers()["x-content-type-options"], "nosniff");
        assert_eq!(response.headers()["cache-control"], "no-store");
    }
}

#[sqlx::test(migrations = false)]
async fn a_ticket_spent_on_one_instance_is_refused_on_another(pool: PgPool) {
    let (one, admin, one_host) = spawn_with_sandbox(pool.clone()).await;
    let _server = widget_granted_to_admin(&one, &admin).await;
    let (two, _, two_host) = spawn_with_sandbox(pool).await;
    // The admin's session cookie is for 127.0.0.1, whichever port: both instances read it
    // from the database.
    let from_two: Value = server_fn(&two, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    let ticket = from_two["ticket"].as_str().unwrap().to_owned();
    assert_eq!(
        sandbox_frame(&one, &one_host, "widget", &ticket)
            .await
            .status(),
        200,
        "issued by two, served by one"
    );
    assert_eq!(
        sandbox_frame(&two, &two_host, "widget", &ticket)
            .await
            .status(),
        409,
        "spent on one"
    );
    assert_eq!(
        sandbox_frame(&one, &one_host, "widget", &ticket)
            .await
            .status(),
        409
    );

    let from_one: Value = server_fn(&one, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    let ticket = from_one["ticket"].as_str().unwrap();
    assert_eq!(
        sandbox_frame(&two, &two_host, "widget", ticket)
            .await
            .status(),
        200
    );
    assert_eq!(
        sandbox_frame(&one, &one_host, "widget", ticket)
            .await
            .status(),
        409
    );
}

#[sqlx::test(migrations = false)]
async fn a_forged_or_altered_ticket_is_refused_before_anything_is_served(pool: PgPool) {
    let (app, admin, sandbox) = spawn_with_sandbox(pool).await;
    let _server = widget_granted_to_admin(&app, &admin).await;
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    let ticket = view["ticket"].as_str().unwrap().to_owned();
    let (payload, tag) = ticket.split_once('.').unwrap();
    let flipped = |s: &str| {
        let mut b = s.as_bytes().to_vec();
        b[5] = if b[5] == b'A' { b'B' } else { b'A' };
        String::from_utf8(b).unwrap()
    };
    for forged in [
        format!("{}.{tag}", flipped(payload)),
        format!("{payload}.{}", flipped(tag)),
        format!("{payload}."),
        "x".repeat(5000),
    ] {
        let response = sandbox_frame(&app, &sandbox, "widget", &forged).await;
        assert_eq!(response.status(), 409, "{forged}");
        assert!(!response.text().await.unwrap().contains("<script"));
    }
    // Not as a top-level page, even with a live ticket (which stays unspent).
    let top = client()
        .get(app.url(&format!("/apps/widget/frame/{ticket}")))
        .header("host", &sandbox)
        .header("sec-fetch-dest", "document")
        .send()
        .await
        .unwrap();
    assert_eq!(top.status(), 403);
    assert_eq!(
        sandbox_frame(&app, &sandbox, "widget", &ticket)
            .await
            .status(),
        200
    );
    // A refresh of the pin since the open: the ticket names the copy opened, not the new one.
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    sqlx::query("UPDATE pins SET sha256 = repeat('b', 64)")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let changed = sandbox_frame(&app, &sandbox, "widget", view["ticket"].as_str().unwrap()).await;
    assert_eq!(changed.status(), 409);
    assert!(
        changed
            .text()
            .await
            .unwrap()
            .contains("changed since it was opened")
    );
}
