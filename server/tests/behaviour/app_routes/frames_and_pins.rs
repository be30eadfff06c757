//! The frame route: the person's pin served under exactly the frame CSP, one document per app
//! session, refused to strangers and cross-site; pins listed and revoked.

use super::*;

#[sqlx::test(migrations = false)]
async fn the_frame_serves_the_pin_under_exactly_the_frame_csp(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    let response = frame(&app, &admin, "widget").await;
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(response.headers()["x-frame-options"], "SAMEORIGIN");
    assert_eq!(response.headers()["cache-control"], "no-store");
    let body = response.text().await.unwrap();
    assert!(body.contains("<base target=\"_blank\">"));
    let hashes = app::apps::ssr::scripts::script_hashes(&body);
    assert_eq!(hashes.len(), 1, "the widget has one inline module script");
    assert_eq!(
        csp,
        format!(
            "sandbox allow-scripts allow-popups allow-popups-to-escape-sandbox; default-src 'none'; \
             script-src '{}'; style-src 'unsafe-inline' data: blob: https://cdn.example.com; \
             img-src data: blob: https://cdn.example.com; font-src data: blob: https://cdn.example.com; \
             media-src data: blob: https://cdn.example.com; connect-src 'none'; object-src 'none'; \
             frame-src 'none'; form-action 'none'; base-uri 'none'; frame-ancestors {}",
            hashes[0], app.base
        ),
        "the declared `https://bad.example.com; script-src *` is dropped, the good domain kept"
    );

    // Later opens serve the pin, not the server's changed copy.
    server
        .control(json!({"html": "<!doctype html><p>changed</p>"}))
        .await;
    refresh_server(&app, &admin, "widget").await;
    let again = frame(&app, &admin, "widget").await.text().await.unwrap();
    assert_eq!(again, body);
    let pinned: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'app_pinned'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(pinned, 1, "pinned once, audited");
}

/// A browser's frame load gets the pin compressed, once strad has compressed it (off the
/// request path, after the first load): the same bytes, under the same policy.
#[sqlx::test(migrations = false)]
async fn the_frame_is_sent_compressed_to_a_browser_that_accepts_it(pool: PgPool) {
    use std::io::Read;
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    let plain = frame(&app, &admin, "widget").await;
    assert!(plain.headers().get("content-encoding").is_none());
    let csp = plain.headers()["content-security-policy"].clone();
    let served = plain.bytes().await.unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (coding, sent) = loop {
        let issued = ticket(&app, &admin, "widget").await.unwrap();
        let response = admin
            .get(app.url(&format!("/apps/widget/frame/{issued}")))
            .header("sec-fetch-site", "same-origin")
            .header("sec-fetch-dest", "iframe")
            .header("accept-encoding", "gzip, deflate, br, zstd")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-security-policy"], csp);
        assert_eq!(response.headers()["vary"], "accept-encoding");
        let coding = response.headers().get("content-encoding").cloned();
        let body = response.bytes().await.unwrap();
        match coding {
            Some(coding) => break (coding, body),
            None => assert_eq!(body, served, "sent as it is until compressed"),
        }
        assert!(std::time::Instant::now() < deadline, "never compressed");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(coding, "br");
    let mut decoded = Vec::new();
    brotli::Decompressor::new(&sent[..], 4096)
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, served);
}

#[sqlx::test(migrations = false)]
async fn a_corrupt_pin_is_refused_with_a_clear_message(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    assert_eq!(frame(&app, &admin, "widget").await.status(), 200);
    // A ticket issued while the pin was intact; the bytes change before the frame loads.
    let issued = ticket(&app, &admin, "widget").await.unwrap();
    sqlx::query("UPDATE pins SET bytes = bytes || '<script>evil()</script>'::bytea")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let response = frame_with(&app, &admin, "widget", &issued).await;
    assert_eq!(response.status(), 409);
    let page = response.text().await.unwrap();
    assert!(page.contains("corrupt"));
    assert!(!page.contains("evil()"));
    // The console no longer opens it: no ticket, the page says why.
    let view: Value = server_fn(&app, &admin, "apps/open", &[("slug", "widget")])
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["status"], "Corrupt");
    assert!(view["ticket"].is_null());
}

#[sqlx::test(migrations = false)]
async fn the_frame_is_refused_to_strangers_and_never_pinned_cross_site(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    assert_eq!(
        app.client
            .get(app.url("/apps/widget/frame/0123456789abcdef0123456789abcdef"))
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    // Not entitled and not existing answer alike.
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let not_granted = frame(&app, &admin, "widget").await;
    let missing = frame(&app, &admin, "no-such-slug").await;
    assert_eq!(
        (not_granted.status(), missing.status()),
        (
            reqwest::StatusCode::FORBIDDEN,
            reqwest::StatusCode::FORBIDDEN
        )
    );
    assert_eq!(
        not_granted.text().await.unwrap(),
        missing.text().await.unwrap()
    );
    grant(&app, &admin, "widget", LOCAL_ADMIN).await;
    // A ticket issued, then the pin gone: a cross-site load of the frame does not pin.
    let issued = ticket(&app, &admin, "widget").await.unwrap();
    sqlx::query("DELETE FROM pins")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    let cross = admin
        .get(app.url(&format!("/apps/widget/frame/{issued}")))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status(), 403);
    let pins: i64 = sqlx::query_scalar("SELECT count(*) FROM pins")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(pins, 0);
}

/// The frame route on the console's origin is answered before any routing: its session is
/// read from the request's cookie as the session layer reads it (the last cookie of the
/// name deciding), and each answer carries the console's headers, sets no cookie, and is
/// counted under the route.
#[sqlx::test(migrations = false)]
async fn the_frame_route_reads_the_session_cookie_and_carries_the_consoles_headers(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    // A session of the same person whose cookie the test holds itself.
    let bare = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let link = app.local.as_ref().expect("local mode").mint();
    let signed_in = bare.get(&link).send().await.unwrap();
    let cookie = signed_in.headers()["set-cookie"].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    assert!(cookie.starts_with("strad_session="), "{cookie}");
    let stale = "strad_session=AAAAAAAAAAAAAAAAAAAAAA";
    let load = |method: reqwest::Method, cookies: String| {
        let (app, admin, bare) = (&app, &admin, &bare);
        async move {
            let issued = ticket(app, admin, "widget").await.unwrap();
            bare.request(method, app.url(&format!("/apps/widget/frame/{issued}")))
                .header("sec-fetch-site", "same-origin")
                .header("sec-fetch-dest", "iframe")
                .header("cookie", cookies)
                .send()
                .await
                .unwrap()
        }
    };
    let consoles = |response: &reqwest::Response, framed_by: &str| {
        let h = response.headers();
        assert!(h.get("set-cookie").is_none());
        assert_eq!(h["x-frame-options"], framed_by);
        assert_eq!(h["x-content-type-options"], "nosniff");
        assert_eq!(h["cache-control"], "no-store");
        assert!(h.contains_key("content-security-policy"));
        assert!(h.contains_key("referrer-policy"));
    };

    let served = load(reqwest::Method::GET, cookie.clone()).await;
    assert_eq!(served.status(), 200);
    consoles(&served, "SAMEORIGIN");
    assert_eq!(served.headers()["referrer-policy"], "no-referrer");
    assert!(
        served
            .text()
            .await
            .unwrap()
            .contains("<base target=\"_blank\">")
    );

    let stale_last = load(reqwest::Method::GET, format!("{cookie}; {stale}")).await;
    assert_eq!(
        stale_last.status(),
        401,
        "the last cookie of the name decides"
    );
    consoles(&stale_last, "SAMEORIGIN");
    assert!(
        stale_last.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .starts_with("sandbox; default-src 'none'; script-src 'none'")
    );
    let stale_first = load(reqwest::Method::GET, format!("{stale}; {cookie}")).await;
    assert_eq!(stale_first.status(), 200);
    assert_eq!(load(reqwest::Method::GET, "x=1".into()).await.status(), 401);

    let head = load(reqwest::Method::HEAD, cookie.clone()).await;
    assert_eq!(head.status(), 200);
    consoles(&head, "SAMEORIGIN");
    assert!(head.bytes().await.unwrap().is_empty());
    for method in [reqwest::Method::POST, reqwest::Method::DELETE] {
        let refused = load(method.clone(), cookie.clone()).await;
        assert_eq!(refused.status(), 405, "{method}");
        assert_eq!(refused.headers()["allow"], "GET,HEAD");
        consoles(&refused, "DENY");
    }

    let metrics = app.get("/metrics").await.text().await.unwrap();
    for series in [
        r#"strad_http_requests_total{route="/apps/{slug}/frame/{ticket}",method="GET",status="2xx"}"#,
        r#"strad_http_requests_total{route="/apps/{slug}/frame/{ticket}",method="GET",status="4xx"}"#,
        r#"strad_http_requests_total{route="/apps/{slug}/frame/{ticket}",method="POST",status="4xx"}"#,
    ] {
        assert!(metrics.contains(series), "{series}\n{metrics}");
    }
}

#[sqlx::test(migrations = false)]
async fn the_app_page_pins_on_first_open_and_limits_its_frame_to_one_path(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    let response = admin
        .get(app.url("/apps/widget"))
        .header("sec-fetch-site", "same-origin")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let csp = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    let page = response.text().await.unwrap();
    let nonce = page
        .split("nonce=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the hydration script carries a nonce");
    assert_eq!(
        csp,
        format!(
            "script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; frame-src {}/apps/widget/frame/; \
             frame-ancestors 'none'; object-src 'none'; base-uri 'self'; form-action 'self'",
            app.base
        )
    );
    let src = page
        .split("data-src=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the frame's address waits for the bridge in data-src");
    let ticket = src
        .strip_prefix("/apps/widget/frame/")
        .and_then(|rest| rest.strip_suffix("?uri=ui%3A%2F%2Ftest%2Fwidget.html"))
        .unwrap_or_else(|| panic!("unexpected frame address {src}"));
    assert!(
        ticket
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')),
        "a signed ticket is one path segment: {ticket}"
    );
    assert!(page.contains("sandbox=\"allow-scripts allow-popups allow-popups-to-escape-sandbox\""));
    let pins: i64 = sqlx::query_scalar("SELECT count(*) FROM pins")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(pins, 1);
    // Strangers get the 403 page, for a slug that exists or not.
    sqlx::query("DELETE FROM entitlements")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    for slug in ["widget", "no-such-slug"] {
        assert_eq!(
            admin
                .get(app.url(&format!("/apps/{slug}")))
                .send()
                .await
                .unwrap()
                .status(),
            403,
            "{slug}"
        );
    }
}

#[sqlx::test(migrations = false)]
async fn each_app_session_is_served_one_document(pool: PgPool) {
    let (app, admin, _server) = spawn_app_with_widget(pool).await;
    let issued = ticket(&app, &admin, "widget").await.unwrap();
    // Not as a top-level page (a console link to it, an address typed), and not a load the
    // page starts itself (a cross-site initiator): refusals that do not spend the ticket.
    for (site, dest, says) in [
        ("same-origin", "document", "only works inside the console"),
        ("none", "document", "only works inside the console"),
        ("cross-site", "iframe", "by itself"),
    ] {
        let refused = admin
            .get(app.url(&format!("/apps/widget/frame/{issued}")))
            .header("sec-fetch-site", site)
            .header("sec-fetch-dest", dest)
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 403, "{site} {dest}");
        let page = refused.text().await.unwrap();
        assert!(!page.contains("<script"), "{site} {dest}");
        assert!(page.contains(says), "{site} {dest}: {page}");
    }
    let first = frame_with(&app, &admin, "widget", &issued).await;
    assert_eq!(first.status(), 200);
    let second = frame_with(&app, &admin, "widget", &issued).await;
    assert_eq!(second.status(), 409);
    assert_eq!(
        second.headers()["content-security-policy"],
        "sandbox; default-src 'none'; script-src 'none'; frame-ancestors 'self'"
    );
    assert!(second.text().await.unwrap().contains("second document"));
    // A ticket the console never issued, or one issued for another server (the person and
    // server binding is unit-tested with the ticket store).
    register_server(&app, &admin, "gadget", &_server.url, true).await;
    let granted = server_fn(
        &app,
        &admin,
        "entitlements/grant",
        &[("slug", "gadget"), ("grantee", "admin@localhost")],
    )
    .await;
    assert_eq!(granted.status(), 200);
    let for_widget = ticket(&app, &admin, "widget").await.unwrap();
    let made_up = "0123456789abcdef0123456789abcdef".to_string();
    for ticket in [&made_up, &for_widget] {
        let response = frame_with(&app, &admin, "gadget", ticket).await;
        assert_eq!(response.status(), 409, "{ticket}");
        assert!(!response.text().await.unwrap().contains("<script"));
    }
    // A ticket signed for another server is refused before anything is read or spent:
    // it still loads its own server's frame, once.
    assert_eq!(
        frame_with(&app, &admin, "widget", &for_widget)
            .await
            .status(),
        200
    );
    assert_eq!(
        frame_with(&app, &admin, "widget", &for_widget)
            .await
            .status(),
        409
    );
}

/// A person's pins: listed with whether the server's copy differs and whether each is
/// intact; revoking deletes the pin and is audited.
#[sqlx::test(migrations = false)]
async fn pins_are_listed_and_revoked_with_an_audit_row(pool: PgPool) {
    let (app, admin, server) = spawn_app_with_widget(pool).await;
    assert!(
        ticket(&app, &admin, "widget").await.is_some(),
        "opening pins"
    );
    let listed = pins_of(&app, &admin).await;
    assert_eq!(listed[0]["uri"], "ui://test/widget.html");
    assert_eq!(
        (listed[0]["intact"].clone(), listed[0]["differs"].clone()),
        (json!(true), json!(false))
    );
    assert_eq!(
        listed[0]["granted_domains"],
        json!(["https://cdn.example.com"])
    );
    server
        .control(json!({"html": "<!doctype html><p>new</p>"}))
        .await;
    refresh_server(&app, &admin, "widget").await;
    assert_eq!(pins_of(&app, &admin).await[0]["differs"], true);
    sqlx::query("UPDATE pins SET bytes = bytes || 'x'::bytea")
        .execute(&app.pool)
        .await
        .unwrap();
    app.caught_up().await;
    assert_eq!(pins_of(&app, &admin).await[0]["intact"], false);
    let form = [("slug", "widget"), ("uri", "ui://test/widget.html")];
    let revoked: Value = server_fn(&app, &admin, "pins/revoke", &form)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(revoked, true);
    assert_eq!(pins_of(&app, &admin).await, json!([]));
    let again: Value = server_fn(&app, &admin, "pins/revoke", &form)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(again, false);
    let audited: i64 =
        sqlx::query_scalar("SELECT count(*) FROM audit_log WHERE kind = 'app_pin_revoked'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(audited, 1);
}

async fn pins_of(app: &TestApp, browser: &reqwest::Client) -> Value {
    server_fn(app, browser, "pins/mine", &[])
        .await
        .json::<Value>()
        .await
        .unwrap()
}
