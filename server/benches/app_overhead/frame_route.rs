//! The frame route serving a 300 KiB app, taking turns with nginx serving the same bytes.

use super::*;

pub async fn beside_nginx(app: &TestApp, admin: &reqwest::Client, node: u32) {
    // The frame route.
    let apps = TestServer::start().await;
    let script = |n: usize| format!("<script>window.part{n} = {n};</script>");
    let filler = "<p>strad frame benchmark: lorem ipsum dolor sit amet.</p>\n";
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>big</title>{}</head><body>",
        script(1)
    );
    while html.len() < APP_BYTES - 200 {
        html.push_str(filler);
    }
    html.push_str(&script(2));
    html.push_str(&script(3));
    html.push_str("</body></html>");
    apps.control(json!({"html": html})).await;
    register_server(app, admin, "big", &apps.url, true).await;
    let granted = server_fn(
        app,
        admin,
        "entitlements/grant",
        &[("slug", "big"), ("grantee", "admin@localhost")],
    )
    .await;
    assert_eq!(granted.status(), 200);
    // Tickets (the app session of each frame load) are issued when the console opens the
    // app; they are minted before the clock starts, so only the frame route is measured.
    let tickets = Arc::new(std::sync::Mutex::new(
        mint_tickets(app, admin, "big", 2 * ROUNDS * FRAMES + 400).await,
    ));
    let frame = {
        let (client, url, tickets) = (admin.clone(), app.url("/apps/big/frame"), tickets.clone());
        move || {
            let (client, url) = (client.clone(), url.clone());
            let ticket = tickets.lock().unwrap().pop().expect("enough tickets");
            async move {
                let response = client
                    .get(format!("{url}/{ticket}"))
                    .header("sec-fetch-site", "same-origin")
                    .header("sec-fetch-dest", "iframe")
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                if !response.status().is_success() {
                    return Err(format!("status {}", response.status()));
                }
                let body = response.bytes().await.map_err(|e| e.to_string())?;
                (body.len() > APP_BYTES / 2)
                    .then_some(())
                    .ok_or("short body".into())
            }
        }
    };
    // nginx serves the bytes strad serves (after `<base target>`), with the same CSP header.
    let first_ticket = tickets.lock().unwrap().pop().unwrap();
    let first = admin
        .get(app.url(&format!("/apps/big/frame/{first_ticket}")))
        .header("sec-fetch-site", "same-origin")
        .header("sec-fetch-dest", "iframe")
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    let csp = first.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    let served = first.bytes().await.unwrap();
    let nginx = Nginx::start(&served, &csp);
    let plain = reqwest::Client::new();
    let nginx_get = {
        let url = nginx.url.clone();
        move || {
            let (client, url) = (plain.clone(), url.clone());
            async move {
                let response = client.get(url).send().await.map_err(|e| e.to_string())?;
                if !response.status().is_success() {
                    return Err(format!("status {}", response.status()));
                }
                let body = response.bytes().await.map_err(|e| e.to_string())?;
                (body.len() > APP_BYTES / 2)
                    .then_some(())
                    .ok_or("short body".into())
            }
        }
    };
    nginx.wait_ready().await;
    measure(300, 4, frame.clone()).await;
    measure(300, 4, nginx_get.clone()).await;
    // Strad and nginx take turns, ROUNDS times, so that the machine's slow moments fall on
    // both; each round is one ratio, and the median round is the figure.
    println!(
        "\nframe route, a {} KiB app, {ROUNDS} rounds of {FRAMES} loads each, taking turns",
        served.len() / 1024
    );
    // During strad's turn, CPU per load: strad's, PostgreSQL's (a frame load served from
    // memory asks it nothing), split into its connections' (strad reading it) and its own
    // work (checkpoints, WAL writing, autovacuum), and other processes', to tell a slow
    // round's cause.
    println!(
        "| clients | round | strad req/s | p50 | p99 | nginx req/s | p50 | p99 | strad / nginx | CPU per strad load (µs): strad / PostgreSQL's connections / PostgreSQL's own work / other processes | during strad's turn |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for concurrency in [1, 32] {
        let mut ratios = Vec::new();
        for round in 1..=ROUNDS {
            let (since, heard) = (database_clock(&app.pool).await, app.memos.heard_so_far());
            let (s, cpu) = with_cpu(node, measure(FRAMES, concurrency, frame.clone())).await;
            let mut during = database_maintenance_since(&app.pool, &since).await;
            let announced = app.memos.heard_so_far() - heard;
            if announced > 0 {
                during.push_str(&format!(" {announced} changes to authority heard"));
            }
            if !app.memos.is_live() {
                during.push_str(" strad was not hearing changes (every load read PostgreSQL)");
            }
            let n = measure(FRAMES, concurrency, nginx_get.clone()).await;
            let ratio = 100.0 * s.requests_per_second / n.requests_per_second;
            ratios.push(ratio);
            let per = |ms: f64| 1000.0 * ms / FRAMES as f64;
            println!(
                "| {concurrency} | {round} | {:.0} | {} | {} | {:.0} | {} | {} | {ratio:.0}% | {:.0} / {:.0} / {:.0} / {:.0} | {during} |",
                s.requests_per_second,
                ms(s.p50),
                ms(s.p99),
                n.requests_per_second,
                ms(n.p50),
                ms(n.p99),
                per(cpu.strad),
                per(cpu.postgres - cpu.postgres_own),
                per(cpu.postgres_own),
                per(cpu.others()),
            );
        }
        let ratio = median(&mut ratios);
        println!("| {concurrency} | median | | | | | | | {ratio:.0}% |");
        summary(
            &format!("frame route / nginx, same bytes, {concurrency} clients"),
            format!("{:.2}×", ratio / 100.0),
            "≥ 1.0×",
        );
    }
}
