//! The frame route serving a 300 KiB app, taking turns with nginx serving the same bytes,
//! both asked as a browser asks (`Accept-Encoding`) and both answering with the same gzip.

use super::*;

/// An app of `APP_BYTES`: three inline scripts and, between them, code-like text that gzip
/// shrinks about fourfold, as it does the official example apps (3.4–3.9×).
fn big_app() -> String {
    let script = |n: usize| format!("<script>window.part{n} = {n};</script>");
    let words = [
        "function", "return", "const", "let", "this", "value", "state", "render", "update",
        "element", "props", "children", "window", "document", "length", "index", "object",
        "string", "number", "array",
    ];
    let letters = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$";
    // xorshift64: the same app every run.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |below: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % below as u64) as usize
    };
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>big</title>{}</head><body><script>",
        script(1)
    );
    while html.len() < APP_BYTES - 200 {
        let (a, b, c, d) = (
            words[next(words.len())],
            letters[next(letters.len())] as char,
            &words[next(words.len())][..3],
            words[next(words.len())],
        );
        html.push_str(&format!(
            "{a} {b}{c}={d}({},{});",
            words[next(words.len())],
            next(100)
        ));
    }
    html.push_str("</script>");
    html.push_str(&script(2));
    html.push_str(&script(3));
    html.push_str("</body></html>");
    html
}

/// Whether a load, as a browser accepts it, was answered with `expected` bytes of gzip.
async fn gzip_load(
    sent: impl Future<Output = reqwest::Result<reqwest::Response>>,
    expected: usize,
) -> Result<(), String> {
    let response = sent.await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("status {}", response.status()));
    }
    let gzip = response
        .headers()
        .get("content-encoding")
        .is_some_and(|v| v == "gzip");
    let length = response.bytes().await.map_err(|e| e.to_string())?.len();
    match (gzip, length == expected) {
        (false, _) => Err("not gzip".to_owned()),
        (true, false) => Err(format!("{length} bytes, not {expected}")),
        (true, true) => Ok(()),
    }
}

pub async fn beside_nginx(app: &TestApp, admin: &reqwest::Client, node: u32) {
    // The frame route.
    let apps = TestServer::start().await;
    apps.control(json!({"html": big_app()})).await;
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
        mint_tickets(app, admin, "big", 2 * ROUNDS * FRAMES + 800).await,
    ));
    // Each load carries the session's cookie as a browser sends it.
    let cookie = session_cookie(app).await;
    let load = {
        let (client, url, tickets, cookie) = (
            reqwest::Client::new(),
            app.url("/apps/big/frame"),
            tickets.clone(),
            cookie.clone(),
        );
        move |accept: &'static str| {
            let ticket = tickets.lock().unwrap().pop().expect("enough tickets");
            client
                .get(format!("{url}/{ticket}"))
                .header("cookie", cookie.clone())
                .header("sec-fetch-site", "same-origin")
                .header("sec-fetch-dest", "iframe")
                .header("accept-encoding", accept)
                .send()
        }
    };
    // The bytes strad serves (after `<base target>`) and their gzip, once strad has
    // compressed them (after the first load), with the same CSP header.
    let first = load("identity").await.unwrap();
    assert_eq!(first.status(), 200);
    let csp = first.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    let served = first.bytes().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (gzipped, gzip_headers) = loop {
        let response = load("gzip").await.unwrap();
        let gzip = response
            .headers()
            .get("content-encoding")
            .is_some_and(|v| v == "gzip");
        let headers = response.headers().clone();
        let body = response.bytes().await.unwrap();
        if gzip {
            break (body, headers);
        }
        assert!(Instant::now() < deadline, "strad never compressed the app");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // nginx serves the same two files with `gzip_static`.
    let nginx = Nginx::start(&served, &gzipped, &csp);
    nginx.wait_ready().await;
    let floor = bare_axum(gzipped.clone(), gzip_headers);
    let wrk = Wrk::new();
    // The requests a browser sends for a frame, from the console's page.
    let console = app.url("");
    let cookie = cookie.to_str().unwrap().to_owned();
    let as_console = [
        (
            "Host",
            console.trim_start_matches("http://").trim_end_matches('/'),
        ),
        ("Cookie", cookie.as_str()),
        ("Sec-Fetch-Site", "same-origin"),
        ("Sec-Fetch-Dest", "iframe"),
        ("Accept-Encoding", "gzip"),
    ];
    let from_nginx = Run {
        origin: nginx.origin.as_str(),
        paths: &["/app.html".to_owned()],
        count: FRAMES,
        headers: &[
            ("Host", "127.0.0.1"),
            ("Sec-Fetch-Site", "same-origin"),
            ("Sec-Fetch-Dest", "iframe"),
            ("Accept-Encoding", "gzip"),
        ],
        gzip: gzipped.len(),
    };
    println!(
        "\nframe route, a {} KiB app sent as {} KiB of gzip, {ROUNDS} rounds of {FRAMES} loads each, taking turns, from wrk",
        served.len() / 1024,
        gzipped.len() / 1024
    );
    let frames = Frames {
        origin: console.trim_end_matches('/'),
        tickets: &tickets,
        headers: &as_console,
        gzip: gzipped.len(),
    };
    let from_floor = Run {
        origin: floor.as_str(),
        ..from_nginx
    };
    let compared = Compared {
        nginx: &from_nginx,
        floor: &from_floor,
    };
    take_turns(app, node, "frame route", &wrk, &frames, &compared).await;

    // The same frames on the sandbox origin (`STRAD_SANDBOX_ORIGIN`, the default in local
    // mode), from a second instance on the same database: there the frame route has a router
    // of its own, with no session layer, and the ticket is the only credential.
    let (listener, base) = bind().await;
    let host = format!("localhost:{}", listener.local_addr().unwrap().port());
    let sandboxed = spawn_app_on(
        app.pool.clone(),
        listener,
        base,
        &[
            ("STRAD_SANDBOX_ORIGIN", &format!("http://{host}")),
            ("STRAD_FRAMES_UNLOADED_PER_PERSON", "1000000"),
        ],
    )
    .await;
    let its_admin = signed_in_admin(&sandboxed).await;
    let tickets = Arc::new(std::sync::Mutex::new(
        mint_tickets(&sandboxed, &its_admin, "big", 2 * ROUNDS * FRAMES + 800).await,
    ));
    let sandbox_host = host.clone();
    let load = {
        let (client, url, tickets) = (
            reqwest::Client::new(),
            sandboxed.url("/apps/big/frame"),
            tickets.clone(),
        );
        move || {
            let ticket = tickets.lock().unwrap().pop().expect("enough tickets");
            client
                .get(format!("{url}/{ticket}"))
                .header("host", &host)
                .header("sec-fetch-site", "cross-site")
                .header("sec-fetch-dest", "iframe")
                .header("accept-encoding", "gzip")
                .send()
        }
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while gzip_load(load(), gzipped.len()).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the sandbox origin never sent the gzip"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sandboxed_origin = sandboxed.url("");
    let frames = Frames {
        origin: sandboxed_origin.trim_end_matches('/'),
        tickets: &tickets,
        headers: &[
            ("Host", sandbox_host.as_str()),
            ("Sec-Fetch-Site", "cross-site"),
            ("Sec-Fetch-Dest", "iframe"),
            ("Accept-Encoding", "gzip"),
        ],
        gzip: gzipped.len(),
    };
    let what = "frame route on the sandbox origin";
    take_turns(&sandboxed, node, what, &wrk, &frames, &compared).await;
}

/// The floor under the frame route: a bare axum server, on a runtime built as strad's
/// (`runtime::build`: its worker threads) with `TCP_NODELAY` as strad sets it, answering
/// every request with the gzip strad sends and strad's headers, from memory. No routing,
/// session, ticket or check: what the HTTP stack strad is built on costs a load by itself.
/// Its `http://127.0.0.1:<port>`; it serves until the process ends.
fn bare_axum(gzipped: axum::body::Bytes, mut headers: reqwest::header::HeaderMap) -> String {
    use axum::serve::ListenerExt;
    for set_by_hyper in ["date", "content-length", "transfer-encoding", "connection"] {
        headers.remove(set_by_hyper);
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let runtime = strad_server::runtime::build("bench-floor").expect("runtime");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)
                .unwrap()
                .tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
            let answer = move || {
                let (body, headers) = (gzipped.clone(), headers.clone());
                async move {
                    let mut response = axum::response::Response::new(axum::body::Body::from(body));
                    *response.headers_mut() = headers;
                    response
                }
            };
            let floor = axum::Router::new().fallback(answer);
            axum::serve(listener, floor).await.unwrap();
        });
    });
    origin
}

/// What the frame route is compared with: nginx, and the bare axum server (`bare_axum`),
/// each asked for its one path as many times as strad is loaded.
struct Compared<'a> {
    nginx: &'a Run<'a>,
    floor: &'a Run<'a>,
}

/// Frame loads of one origin: each spends a ticket of `tickets`.
struct Frames<'a> {
    origin: &'a str,
    tickets: &'a std::sync::Mutex<Vec<String>>,
    headers: &'a [(&'a str, &'a str)],
    gzip: usize,
}

impl Frames<'_> {
    /// `count` loads from `connections`, each with a ticket of its own.
    async fn round(&self, wrk: &Wrk, count: usize, connections: usize) -> Figures {
        let paths: Vec<String> = {
            let mut tickets = self.tickets.lock().unwrap();
            let at = tickets.len().checked_sub(count).expect("enough tickets");
            tickets
                .drain(at..)
                .map(|ticket| format!("/apps/big/frame/{ticket}"))
                .collect()
        };
        let run = Run {
            origin: self.origin,
            paths: &paths,
            count,
            headers: self.headers,
            gzip: self.gzip,
        };
        wrk.run(&run, connections).await
    }
}

/// The `Cookie` header of a new sign-in as local mode's admin.
async fn session_cookie(app: &TestApp) -> reqwest::header::HeaderValue {
    use reqwest::cookie::CookieStore;
    let jar = Arc::new(reqwest::cookie::Jar::default());
    let browser = reqwest::Client::builder()
        .cookie_provider(jar.clone())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    sign_in_locally(app, &browser).await;
    jar.cookies(&app.url("/").parse().unwrap())
        .expect("signed in")
}

/// strad's frame loads and nginx's take turns, `ROUNDS` times at 1 and at 32 connections,
/// so that the machine's slow moments fall on both; each round is one ratio, and the
/// median round is the figure (named `what` in the summary).
async fn take_turns(
    app: &TestApp,
    node: u32,
    what: &str,
    wrk: &Wrk,
    frames: &Frames<'_>,
    compared: &Compared<'_>,
) {
    let (nginx, floor) = (compared.nginx, compared.floor);
    // Warm each: connections, the prepared copy, nginx's file cache.
    frames.round(wrk, 300, 4).await;
    for compared in [nginx, floor] {
        wrk.run(
            &Run {
                count: 300,
                ..*compared
            },
            4,
        )
        .await;
    }
    println!("\n{what}");
    // During strad's turn, CPU per load: strad's, wrk's, PostgreSQL's (a frame load served
    // from memory asks it nothing), split into its connections' (strad reading it) and its
    // own work (checkpoints, WAL writing, autovacuum), and other processes', to tell a slow
    // round's cause; during nginx's, nginx's and wrk's.
    println!(
        "| clients | round | strad req/s | p50 | p99 | nginx req/s | p50 | p99 | strad / nginx | bare axum req/s | bare axum / nginx | CPU per strad load (µs): strad / wrk / PostgreSQL's connections / PostgreSQL's own work / other processes | CPU per nginx load (µs): nginx / wrk | during strad's turn |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for concurrency in [1, 32] {
        let (mut ratios, mut floors) = (Vec::new(), Vec::new());
        for round in 1..=ROUNDS {
            let (since, heard) = (database_clock(&app.pool).await, app.memos.heard_so_far());
            let (s, cpu) = with_cpu(node, frames.round(wrk, FRAMES, concurrency)).await;
            let mut during = database_maintenance_since(&app.pool, &since).await;
            let announced = app.memos.heard_so_far() - heard;
            if announced > 0 {
                during.push_str(&format!(" {announced} changes to authority heard"));
            }
            if !app.memos.is_live() {
                during.push_str(" strad was not hearing changes (every load read PostgreSQL)");
            }
            let (n, its) = with_cpu(node, wrk.run(nginx, concurrency)).await;
            let f = wrk.run(floor, concurrency).await;
            let ratio = 100.0 * s.requests_per_second / n.requests_per_second;
            let floor_ratio = 100.0 * f.requests_per_second / n.requests_per_second;
            ratios.push(ratio);
            floors.push(floor_ratio);
            let per = |ms: f64| 1000.0 * ms / FRAMES as f64;
            println!(
                "| {concurrency} | {round} | {:.0} | {} | {} | {:.0} | {} | {} | {ratio:.0}% | {:.0} | {floor_ratio:.0}% | {:.0} / {:.0} / {:.0} / {:.0} / {:.0} | {:.0} / {:.0} | {during} |",
                s.requests_per_second,
                ms(s.p50),
                ms(s.p99),
                n.requests_per_second,
                ms(n.p50),
                ms(n.p99),
                f.requests_per_second,
                per(cpu.strad),
                per(cpu.wrk),
                per(cpu.postgres - cpu.postgres_own),
                per(cpu.postgres_own),
                per(cpu.others()),
                per(its.nginx),
                per(its.wrk),
            );
        }
        let (ratio, floor_ratio) = (median(&mut ratios), median(&mut floors));
        println!("| {concurrency} | median | | | | | | | {ratio:.0}% | | {floor_ratio:.0}% |");
        summary(
            &format!("{what} / nginx, same bytes, {concurrency} clients"),
            format!("{:.2}×", ratio / 100.0),
            "≥ 1.0×",
        );
        summary(
            &format!("{what}'s floor (bare axum, same bytes) / nginx, {concurrency} clients"),
            format!("{:.2}×", floor_ratio / 100.0),
            "–",
        );
    }
}
