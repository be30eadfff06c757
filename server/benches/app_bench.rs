//! Benchmark (ignored by default; `./x bench` runs it in release): what strad adds to an
//! app's tool call, and how fast the frame route serves a 300 KiB app beside nginx.
//!
//! - Tool calls: `get-time` of the real `server-basic-vanillajs` example server, called
//!   directly by MCP clients (rmcp's, over strad's HTTP client, one session per caller), through
//!   `POST /apps/<slug>/tools/call` (session, entitlement, policy, audit row, strad's client
//!   upstream), and through `/mcp` by the same MCP clients with a login token (token, scope,
//!   policy, audit row); 1 and 32 concurrent callers. At one caller, also through a second
//!   strad whose tool calls wait for their audit row's flush to disk
//!   (`STRAD_AUDIT_TOOL_CALLS_FLUSH=before_answer`); at 1 and 32, also through a strad whose
//!   upstream calls go through rmcp's client instead of the direct POST
//!   (`STRAD_UPSTREAM_TOOL_CALLS=rmcp`).
//! - Frame route: `GET /apps/<slug>/frame` (session, entitlement, pin, CSP) for a 300 KiB
//!   app with three inline scripts, and nginx (Debian's package, started here on a loopback
//!   port) serving the very bytes strad served, with the same load generator.
//!
//! The paths compared take turns, several rounds, so that the machine's slow moments fall on
//! each; the median round gives the figures. While the calls run, the CPU time of strad's
//! threads, the load generator, the upstream Node server and PostgreSQL is read from `/proc`.
//! strad runs as many worker threads as the binary would (`TOKIO_WORKER_THREADS`, else one
//! fewer than the cores, at least one). The figures go in the README; nothing here asserts a time.

#[allow(dead_code)]
#[path = "../tests/behaviour/support/mod.rs"]
mod support;

use std::future::Future;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::PgPool;
use support::mcp::{ExampleServer, TestServer, free_port};
use support::*;

/// Calls per path in each round, from one caller and from 32. The upstream stalls now and
/// then for 100–250 ms under 32 callers (Node's own pauses, seen on the direct path too);
/// rounds of several seconds keep one stall from deciding a round's share.
const CALLS: usize = 1_500;
const CALLS_AT_32: usize = 4_500;
const FRAMES: usize = 3_000;
/// Turns the paths take (tool calls: direct, app route, `/mcp`; frames: strad, nginx).
const ROUNDS: usize = 5;
const APP_BYTES: usize = 300 * 1024;

struct Figures {
    requests_per_second: f64,
    p50: Duration,
    p99: Duration,
}

/// Runs `total` requests from `concurrency` callers; every request must succeed.
async fn measure<F, Fut>(total: usize, concurrency: usize, request: F) -> Figures
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let callers = (0..concurrency).map(|_| {
        let (next, request) = (next.clone(), request.clone());
        tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let at = Instant::now();
                request().await.expect("every benchmark request succeeds");
                latencies.push(at.elapsed());
            }
            latencies
        })
    });
    let mut latencies: Vec<Duration> = futures::future::join_all(callers)
        .await
        .into_iter()
        .flat_map(|l| l.unwrap())
        .collect();
    let elapsed = started.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Figures {
        requests_per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

/// The median of `values` (the upper one of an even count), sorting them in place.
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `way` against `direct`, measured in the same round: its share of direct's calls/s, and
/// the milliseconds it adds at p50 and at p99.
fn against(direct: &Figures, way: &Figures) -> [f64; 3] {
    let added = |a: Duration, b: Duration| (a.as_secs_f64() - b.as_secs_f64()) * 1000.0;
    [
        100.0 * way.requests_per_second / direct.requests_per_second,
        added(way.p50, direct.p50),
        added(way.p99, direct.p99),
    ]
}

/// Those three figures as a table's cells.
fn cells([share, p50, p99]: [f64; 3]) -> String {
    format!(" {share:.0}% | {p50:+.2} ms | {p99:+.2} ms |")
}

/// Two ways through strad taking turns with direct, `ROUNDS` times at `concurrency`: each
/// one's share of direct's calls/s, its added p50 and p99, per round and the median round;
/// and each one's CPU per call (strad's threads, PostgreSQL) over all rounds.
async fn side_by_side<D, DFut, F, Fut>(
    node: u32,
    concurrency: usize,
    calls: usize,
    direct: &D,
    ways: [(&str, &F); 2],
) where
    D: Fn() -> DFut + Clone + Send + 'static,
    DFut: Future<Output = Result<(), String>> + Send,
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    let [(a, _), (b, _)] = ways;
    println!(
        "| round | direct calls/s | p50 | p99 | {a}: share | added p50 | added p99 | {b}: share | added p50 | added p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut figures: [[Vec<f64>; 3]; 2] = Default::default();
    let mut cpu = [Cpu::default(); 2];
    for round in 1..=ROUNDS {
        let d = measure(calls, concurrency, direct.clone()).await;
        let mut row = format!(
            "| {round} | {:.0} | {} | {} |",
            d.requests_per_second,
            ms(d.p50),
            ms(d.p99)
        );
        for ((figures, cpu), (_, way)) in figures.iter_mut().zip(&mut cpu).zip(ways) {
            let (f, used) = with_cpu(node, measure(calls, concurrency, way.clone())).await;
            *cpu = cpu.plus(used);
            let compared = against(&d, &f);
            row.push_str(&cells(compared));
            for (list, value) in figures.iter_mut().zip(compared) {
                list.push(value);
            }
        }
        println!("{row}");
    }
    let mut row = "| median | | | |".to_string();
    for way in &mut figures {
        row.push_str(&cells(way.each_mut().map(|list| median(list))));
    }
    println!("{row}");
    let per = |ms: f64| ms / (ROUNDS * calls) as f64;
    println!(
        "CPU per call, strad's threads / PostgreSQL: {a} {:.3} / {:.3} ms, {b} {:.3} / {:.3} ms",
        per(cpu[0].strad),
        per(cpu[0].postgres),
        per(cpu[1].strad),
        per(cpu[1].postgres)
    );
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[sqlx::test(migrations = false)]
#[ignore = "a benchmark: run it on purpose (./x bench)"]
async fn app_tool_calls_and_the_frame_route(pool: PgPool) {
    // The benchmark's one token makes thousands of calls a second, in 32 sessions. The
    // audit's flush is strad's default unless STRAD_AUDIT_TOOL_CALLS_FLUSH says otherwise
    // (to compare both on one machine).
    let flush = std::env::var("STRAD_AUDIT_TOOL_CALLS_FLUSH").unwrap_or("background".into());
    println!("audit rows of tool calls flushed: {flush}");
    let app = spawn_app_with_env(
        pool,
        &[
            ("STRAD_MCP_RATE_PER_SECOND", "100000"),
            ("STRAD_MCP_SESSIONS_PER_MINUTE", "1000"),
            ("STRAD_AUDIT_TOOL_CALLS_FLUSH", &flush),
        ],
    )
    .await;
    let admin = signed_in_admin(&app).await;

    // Tool calls.
    let upstream = ExampleServer::start("mcp-server-basic-vanillajs").await;
    register_server(&app, &admin, "clock", &upstream.url, true).await;
    for (name, form) in [
        (
            "entitlements/grant",
            vec![("slug", "clock"), ("grantee", "admin@localhost")],
        ),
        (
            "policy/mark",
            vec![
                ("slug", "clock"),
                ("tool", "get-time"),
                ("read_only", "true"),
            ],
        ),
    ] {
        assert_eq!(server_fn(&app, &admin, name, &form).await.status(), 200);
    }
    // Direct: MCP clients (rmcp's, the client strad itself uses upstream) talking to the
    // upstream server; through /mcp: the same clients talking to strad with a login token.
    // Each side has one session per concurrent caller.
    let upstream_clients = Arc::new(mcp_sessions(&upstream.url, None, 32).await);
    let direct = round_robin(upstream_clients, "get-time");
    let through = app_call(&app, &admin, "get-time", None);
    let minted: serde_json::Value = server_fn(
        &app,
        &admin,
        "tokens/mint",
        &[("name", "bench"), ("days", "1")],
    )
    .await
    .json()
    .await
    .unwrap();
    let relay_clients = Arc::new(
        mcp_sessions(
            &app.url("/mcp?servers=clock"),
            minted["secret"].as_str(),
            32,
        )
        .await,
    );
    let via_mcp = round_robin(relay_clients, "clock__get-time");
    // Warm every path: connections, prepared statements, the JIT of the upstream.
    measure(300, 4, direct.clone()).await;
    measure(300, 4, through.clone()).await;
    measure(300, 4, via_mcp.clone()).await;
    // For a profiler: `STRAD_BENCH_ONLY=app|mcp|refused` runs only that path (`refused`: an
    // app call refused by policy), 15 000 calls, from 32 callers or with `:1` from one.
    if let Ok(only) = std::env::var("STRAD_BENCH_ONLY") {
        eprintln!("profiling window: pid {}", std::process::id());
        let (path, callers) = match only.split_once(':') {
            Some((path, "1")) => (path, 1),
            _ => (only.as_str(), 32),
        };
        let total = 10 * CALLS;
        let f = match path {
            "mcp" => measure(total, callers, via_mcp).await,
            "refused" => {
                let refused = app_call(&app, &admin, "no-such-tool", Some(403));
                measure(total, callers, refused).await
            }
            _ => measure(total, callers, through).await,
        };
        println!(
            "{only}: {:.0} calls/s, p50 {}",
            f.requests_per_second,
            ms(f.p50)
        );
        return;
    }
    // The three paths take turns, ROUNDS times, so that the machine's slow moments fall on
    // all three; each round gives its own differences to direct, and the median round's are
    // the figures.
    println!(
        "\ntool call (get-time of server-basic-vanillajs), {ROUNDS} rounds per path, taking turns: {CALLS} calls per round from 1 caller, {CALLS_AT_32} from 32"
    );
    println!(
        "| callers | round | direct calls/s | p50 | p99 | app route: share of direct | added p50 | added p99 | `/mcp`: share of direct | added p50 | added p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let node = upstream.pid().expect("the upstream server runs");
    let mut cpu_rows = Vec::new();
    for (concurrency, calls) in [(1, CALLS), (32, CALLS_AT_32)] {
        let mut cpu = [Cpu::default(); 3];
        // Audit commits and rows, app route and `/mcp`.
        let mut commits = [(0u64, 0u64); 2];
        // Per path through strad: shares of direct, added p50s, added p99s (ms).
        let mut figures = [
            [Vec::new(), Vec::new(), Vec::new()],
            [Vec::new(), Vec::new(), Vec::new()],
        ];
        for round in 1..=ROUNDS {
            let (d, d_cpu) = with_cpu(node, measure(calls, concurrency, direct.clone())).await;
            let before = app.audit.written_so_far();
            let (t, t_cpu) = with_cpu(node, measure(calls, concurrency, through.clone())).await;
            let between = app.audit.written_so_far();
            let (m, m_cpu) = with_cpu(node, measure(calls, concurrency, via_mcp.clone())).await;
            let after = app.audit.written_so_far();
            for (sum, one) in cpu.iter_mut().zip([d_cpu, t_cpu, m_cpu]) {
                *sum = sum.plus(one);
            }
            for (sum, (from, to)) in commits
                .iter_mut()
                .zip([(before, between), (between, after)])
            {
                sum.0 += to.0 - from.0;
                sum.1 += to.1 - from.1;
            }
            let mut row = format!(
                "| {concurrency} | {round} | {:.0} | {} | {} |",
                d.requests_per_second,
                ms(d.p50),
                ms(d.p99)
            );
            for (path, f) in figures.iter_mut().zip([&t, &m]) {
                let compared = against(&d, f);
                row.push_str(&cells(compared));
                for (list, value) in path.iter_mut().zip(compared) {
                    list.push(value);
                }
            }
            println!("{row}");
        }
        let mut row = format!("| {concurrency} | median | | | |");
        for path in &mut figures {
            row.push_str(&cells(path.each_mut().map(|list| median(list))));
        }
        println!("{row}");
        let rows_per_commit = commits.map(|(batches, rows)| rows as f64 / batches.max(1) as f64);
        for ((path, cpu), per_commit) in ["direct", "app route", "`/mcp`"]
            .into_iter()
            .zip(cpu)
            .zip([None, Some(rows_per_commit[0]), Some(rows_per_commit[1])])
        {
            cpu_rows.push((concurrency, calls, path, cpu, per_commit));
        }
    }

    // Where the CPU goes: per call, by whom, and how busy the two cores were.
    println!("\nCPU time per call (ms), by process, and the machine's cores in use");
    println!(
        "| callers | path | strad's threads | load generator | upstream (Node) | PostgreSQL | all | cores busy | other processes, ms per call | audit rows per commit |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (concurrency, calls, path, cpu, per_commit) in cpu_rows {
        let per = |ms: f64| ms / (ROUNDS * calls) as f64;
        let all = cpu.strad + cpu.load + cpu.node + cpu.postgres;
        println!(
            "| {concurrency} | {path} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.2} of {} | {:.3} | {} |",
            per(cpu.strad),
            per(cpu.load),
            per(cpu.node),
            per(cpu.postgres),
            per(all),
            all / cpu.wall,
            std::thread::available_parallelism().map_or(0, |n| n.get()),
            per(cpu.others()),
            per_commit.map_or("–".into(), |n| format!("{n:.2}")),
        );
    }

    // The app route at one caller as above (its audit rows flushed as the main instance is
    // set, by default in the background), and through a second strad on the same database
    // whose tool calls also wait for their row's flush
    // (`STRAD_AUDIT_TOOL_CALLS_FLUSH=before_answer`), taking turns with direct: what waiting
    // for the disk adds to each call.
    let strict = spawn_app_with_env(
        app.pool.clone(),
        &[("STRAD_AUDIT_TOOL_CALLS_FLUSH", "before_answer")],
    )
    .await;
    let strict_admin = signed_in_admin(&strict).await;
    let through_strict = app_call(&strict, &strict_admin, "get-time", None);
    measure(300, 1, through_strict.clone()).await;
    println!(
        "\napp route at 1 caller, audit rows flushed as above ({flush}) and before the answer (`before_answer`)"
    );
    side_by_side(
        node,
        1,
        CALLS,
        &direct,
        [
            (flush.as_str(), &through),
            ("before_answer", &through_strict),
        ],
    )
    .await;
    drop(strict);

    // The app route through the main instance, whose tool calls to the upstream are posted
    // straight into the session (`direct.rs`, the default), and through a second strad on the
    // same database making them through rmcp's client (`STRAD_UPSTREAM_TOOL_CALLS=rmcp`),
    // taking turns with direct, at 1 and 32 callers.
    let by_rmcp = spawn_app_with_env(
        app.pool.clone(),
        &[
            ("STRAD_UPSTREAM_TOOL_CALLS", "rmcp"),
            ("STRAD_AUDIT_TOOL_CALLS_FLUSH", &flush),
        ],
    )
    .await;
    let rmcp_admin = signed_in_admin(&by_rmcp).await;
    let through_rmcp = app_call(&by_rmcp, &rmcp_admin, "get-time", None);
    measure(300, 4, through_rmcp.clone()).await;
    for (concurrency, calls) in [(1, CALLS), (32, CALLS_AT_32)] {
        println!(
            "\napp route at {concurrency} caller(s), upstream calls posted directly (default) and through rmcp's client"
        );
        side_by_side(
            node,
            concurrency,
            calls,
            &direct,
            [("direct POST", &through), ("rmcp", &through_rmcp)],
        )
        .await;
    }
    drop(by_rmcp);

    // Where an app call's added time goes, at one caller: a round trip to strad that does
    // nothing (`/healthz`), one audit row committed on its own, and an app call refused by
    // policy (every check and its audit row; nothing upstream).
    let health = {
        let (client, url) = (admin.clone(), app.url("/healthz"));
        move || {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let response = client.get(url).send().await.map_err(|e| e.to_string())?;
                response.bytes().await.map(drop).map_err(|e| e.to_string())
            }
        }
    };
    let audit_row = {
        let pool = app.pool.clone();
        move || {
            let pool = pool.clone();
            async move {
                let actor = app::audit::ssr::writer::Actor::system();
                app::audit::ssr::writer::append_alone(&pool, &actor, "bench", None, &json!({}))
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        }
    };
    let audit_row_in_background = {
        let pool = app.pool.clone();
        move || {
            let pool = pool.clone();
            async move {
                use app::audit::ssr::writer;
                let event = writer::Event {
                    actor: writer::Actor::system(),
                    kind: "bench",
                    slug: None,
                    payload: json!({}),
                };
                let mut connection = pool.acquire().await.map_err(|e| e.to_string())?;
                writer::append_many(&mut connection, &[&event], writer::Flush::Background)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        }
    };
    let refused = app_call(&app, &admin, "no-such-tool", Some(403));
    // strad's own upstream client (its `Hub`), driven from the benchmark like the direct
    // clients: what the client costs, apart from where it runs.
    let hub_call = hub_caller(&upstream.url, true);
    let hub_call_rmcp = hub_caller(&upstream.url, false);
    // The same rmcp client session as direct, saying of itself what strad says (the UI
    // extension): whether what strad declares costs the upstream anything per call.
    let as_strad = {
        use rmcp::ServiceExt;
        let transport = app::servers::ssr::http::transport(&upstream.url, None);
        let session = app::servers::ssr::client::client_info()
            .serve(transport)
            .await
            .expect("initialize");
        if let Some(info) = session.peer_info() {
            println!("\nprotocol the upstream chose: {:?}", info.protocol_version);
        }
        round_robin(Arc::new(vec![session]), "get-time")
    };
    measure(300, 1, hub_call.clone()).await;
    measure(300, 1, hub_call_rmcp.clone()).await;
    measure(300, 1, as_strad.clone()).await;
    println!("\nwhere an app call's added time goes, 1 caller, {CALLS} each");
    println!("| what | p50 | p99 |");
    println!("|---|---|---|");
    for (what, f) in [
        (
            "a round trip to strad that does nothing (`GET /healthz`)",
            measure(CALLS, 1, health).await,
        ),
        (
            "one audit row committed on its own (from the benchmark), waiting for the disk",
            measure(CALLS, 1, audit_row).await,
        ),
        (
            "the same, flushed in the background (as tool calls' rows are by default)",
            measure(CALLS, 1, audit_row_in_background).await,
        ),
        (
            "an app call refused by policy: every check and its audit row, nothing upstream",
            measure(CALLS, 1, refused).await,
        ),
        (
            "the upstream call by strad's own client (`Hub`), from the benchmark",
            measure(CALLS, 1, hub_call).await,
        ),
        (
            "the same, made through rmcp's client (`direct_tool_calls: false`)",
            measure(CALLS, 1, hub_call_rmcp).await,
        ),
        (
            "the upstream call by an rmcp client session (direct, as above)",
            measure(CALLS, 1, direct.clone()).await,
        ),
        (
            "the same, its session declaring strad's capabilities (the UI extension)",
            measure(CALLS, 1, as_strad).await,
        ),
    ] {
        println!("| {what} | {} | {} |", ms(f.p50), ms(f.p99));
    }

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
    register_server(&app, &admin, "big", &apps.url, true).await;
    let granted = server_fn(
        &app,
        &admin,
        "entitlements/grant",
        &[("slug", "big"), ("grantee", "admin@localhost")],
    )
    .await;
    assert_eq!(granted.status(), 200);
    // Tickets (the app session of each frame load) are issued when the console opens the
    // app; they are minted before the clock starts, so only the frame route is measured.
    let tickets = Arc::new(std::sync::Mutex::new(
        mint_tickets(&app, &admin, "big", 2 * ROUNDS * FRAMES + 400).await,
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
        println!(
            "| {concurrency} | median | | | | | | | {:.0}% |",
            median(&mut ratios)
        );
    }
}

/// The database's clock, as text (its own format, compared by the database).
async fn database_clock(pool: &PgPool) -> String {
    sqlx::query_scalar("SELECT clock_timestamp()::text")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// The tables of the benchmark's database that autovacuum vacuumed or analyzed after
/// `since`, and autovacuum's work still running (the database's own work, which a round
/// shares the cores with).
async fn database_maintenance_since(pool: &PgPool, since: &str) -> String {
    let rows: Vec<(String, bool, bool)> = sqlx::query_as(
        "SELECT relname, coalesce(last_autovacuum > $1::timestamptz, false),
                coalesce(last_autoanalyze > $1::timestamptz, false)
         FROM pg_stat_all_tables
         WHERE last_autovacuum > $1::timestamptz OR last_autoanalyze > $1::timestamptz
         ORDER BY relname",
    )
    .bind(since)
    .fetch_all(pool)
    .await
    .unwrap();
    let list = |pick: fn(&(String, bool, bool)) -> bool| {
        rows.iter()
            .filter(|row| pick(row))
            .map(|row| row.0.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (vacuumed, analyzed) = (list(|r| r.1), list(|r| r.2));
    let mut said = Vec::new();
    if !vacuumed.is_empty() {
        said.push(format!("autovacuum of {vacuumed}"));
    }
    if !analyzed.is_empty() {
        said.push(format!("autoanalyze of {analyzed}"));
    }
    let running: Vec<String> = sqlx::query_scalar(
        "SELECT coalesce(query, '') FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    for query in running {
        said.push(format!("still running: {query}"));
    }
    said.join("; ")
}

/// CPU time in milliseconds, by whom: the test server's threads (strad), the rest of this
/// process (the load generator), the upstream Node server and every PostgreSQL process; the
/// whole machine's busy time (all of them and anything else running); and the wall-clock
/// time it was measured over.
#[derive(Clone, Copy, Default)]
struct Cpu {
    strad: f64,
    load: f64,
    node: f64,
    postgres: f64,
    /// Of `postgres`, its background processes' (checkpointer, WAL writer, background writer,
    /// autovacuum): the database's own work, not answering a connection.
    postgres_own: f64,
    machine: f64,
    wall: f64,
}

impl Cpu {
    fn plus(self, other: Cpu) -> Cpu {
        Cpu {
            strad: self.strad + other.strad,
            load: self.load + other.load,
            node: self.node + other.node,
            postgres: self.postgres + other.postgres,
            postgres_own: self.postgres_own + other.postgres_own,
            machine: self.machine + other.machine,
            wall: self.wall + other.wall,
        }
    }

    /// Busy time of processes other than those four (a build, a backup, another tenant).
    fn others(&self) -> f64 {
        (self.machine - self.strad - self.load - self.node - self.postgres).max(0.0)
    }
}

/// Runs `work` and returns what it gave with the CPU time spent while it ran.
async fn with_cpu<T>(node: u32, work: impl Future<Output = T>) -> (T, Cpu) {
    let (before, at) = (cpu_so_far(node), Instant::now());
    let output = work.await;
    let after = cpu_so_far(node);
    let cpu = Cpu {
        strad: after.strad - before.strad,
        load: after.load - before.load,
        node: after.node - before.node,
        postgres: after.postgres - before.postgres,
        postgres_own: after.postgres_own - before.postgres_own,
        machine: after.machine - before.machine,
        wall: at.elapsed().as_secs_f64() * 1000.0,
    };
    (output, cpu)
}

/// The CPU time each party has used so far, from `/proc` (user and system time).
fn cpu_so_far(node: u32) -> Cpu {
    let tick_ms = 1000.0 / clock_ticks_per_second();
    let read = |path: std::path::PathBuf| std::fs::read_to_string(path).ok();
    let mut cpu = Cpu::default();
    for task in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Some((name, ticks)) = read(task.path().join("stat")).as_deref().and_then(used) {
            if name.starts_with(STRAD_THREAD) {
                cpu.strad += ticks * tick_ms;
            } else {
                cpu.load += ticks * tick_ms;
            }
        }
    }
    let node_stat = read(format!("/proc/{node}/stat").into());
    cpu.node = node_stat
        .as_deref()
        .and_then(used)
        .map_or(0.0, |(_, t)| t * tick_ms);
    for process in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if !process
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        if let Some(("postgres", ticks)) = read(process.path().join("stat"))
            .as_deref()
            .and_then(used)
            .as_ref()
            .map(|(name, ticks)| (name.as_str(), *ticks))
        {
            cpu.postgres += ticks * tick_ms;
            // A connection's process is titled "postgres: <cluster>: <user> <database> …".
            let title = std::fs::read(process.path().join("cmdline")).unwrap_or_default();
            let title = String::from_utf8_lossy(&title);
            if [
                "checkpointer",
                "walwriter",
                "background writer",
                "autovacuum",
            ]
            .iter()
            .any(|own| title.contains(own))
            {
                cpu.postgres_own += ticks * tick_ms;
            }
        }
    }
    // The first line of /proc/stat: the machine's time by state, in clock ticks; busy is
    // everything but idle and waiting for I/O, steal included (the hypervisor running its
    // other guests), and guest time is already in user time.
    cpu.machine = read("/proc/stat".into())
        .as_deref()
        .and_then(|stat| stat.lines().next().map(str::to_owned))
        .map_or(0.0, |line| {
            let ticks: Vec<f64> = line
                .split_whitespace()
                .skip(1)
                .filter_map(|t| t.parse().ok())
                .collect();
            let busy: f64 = ticks.iter().take(8).sum::<f64>()
                - ticks.get(3).copied().unwrap_or(0.0)
                - ticks.get(4).copied().unwrap_or(0.0);
            busy * tick_ms
        });
    cpu
}

/// A `/proc/…/stat` line's command name and its user plus system time, in clock ticks.
fn used(stat: &str) -> Option<(String, f64)> {
    // The name is in parentheses and may hold spaces; fields 14 and 15 follow the last one.
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    let fields: Vec<&str> = stat.get(close + 2..)?.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((stat[open + 1..close].to_owned(), user + system))
}

fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

type McpSession = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// `count` MCP sessions over the HTTP client strad uses upstream (rmcp's own default client
/// opens a connection per request: see app/src/servers/ssr/http.rs).
async fn mcp_sessions(url: &str, token: Option<&str>, count: usize) -> Vec<McpSession> {
    use rmcp::ServiceExt;
    let mut sessions = Vec::new();
    for _ in 0..count {
        let transport = app::servers::ssr::http::transport(url, token);
        sessions.push(().serve(transport).await.expect("initialize"));
    }
    sessions
}

/// A request that calls `tool` on the next session in turn.
fn round_robin<H: rmcp::ClientHandler>(
    sessions: Arc<Vec<rmcp::service::RunningService<rmcp::RoleClient, H>>>,
    tool: &'static str,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
+ Clone
+ Send
+ 'static {
    let next = Arc::new(AtomicUsize::new(0));
    move || {
        let (sessions, next) = (sessions.clone(), next.clone());
        Box::pin(async move {
            let session = &sessions[next.fetch_add(1, Ordering::Relaxed) % sessions.len()];
            session
                .call_tool(rmcp::model::CallToolRequestParams::new(tool))
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }
}

/// One `get-time` call by a `Hub` of strad's own, driven from the benchmark: tool calls
/// posted straight into the session (`direct`), or made through rmcp's client.
fn hub_caller(
    url: &str,
    direct: bool,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
+ Clone
+ Send
+ 'static {
    let (changes, _) = tokio::sync::mpsc::unbounded_channel();
    let hub = Arc::new(app::servers::ssr::client::Hub::new(
        app::servers::ssr::client::HubSettings {
            direct_tool_calls: direct,
            ..Default::default()
        },
        changes,
    ));
    let endpoint = app::servers::ssr::client::Endpoint::Http {
        url: url.to_owned(),
    };
    move || {
        let (hub, endpoint) = (hub.clone(), endpoint.clone());
        Box::pin(async move {
            hub.call_tool("clock", &endpoint, "get-time", serde_json::Map::new())
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }
}

/// One app tool call through `POST /apps/clock/tools/call`, as the console's page makes it;
/// it must answer `expect` (any success when `None`).
fn app_call(
    app: &TestApp,
    admin: &reqwest::Client,
    tool: &'static str,
    expect: Option<u16>,
) -> impl Fn() -> std::pin::Pin<Box<dyn Future<Output = Result<(), String>> + Send>>
+ Clone
+ Send
+ 'static {
    let (client, url, origin) = (
        admin.clone(),
        app.url("/apps/clock/tools/call"),
        app.base.clone(),
    );
    move || {
        let (client, url, origin) = (client.clone(), url.clone(), origin.clone());
        Box::pin(async move {
            let response = client
                .post(url)
                .header("origin", origin)
                .header("sec-fetch-site", "same-origin")
                .json(&json!({"name": tool, "arguments": {}}))
                .send()
                .await
                .map_err(|e| e.to_string())?;
            let status = response.status();
            let expected = match expect {
                Some(code) => status.as_u16() == code,
                None => status.is_success(),
            };
            if !expected {
                return Err(format!("status {status}"));
            }
            response.bytes().await.map(drop).map_err(|e| e.to_string())
        })
    }
}

/// `count` frame tickets, as the console issues them when it opens the app.
async fn mint_tickets(
    app: &TestApp,
    client: &reqwest::Client,
    slug: &str,
    count: usize,
) -> Vec<String> {
    use futures::StreamExt;
    futures::stream::iter(0..count)
        .map(|_| async move {
            let response = server_fn(app, client, "apps/open", &[("slug", slug)]).await;
            assert_eq!(response.status(), 200);
            let view: serde_json::Value = response.json().await.unwrap();
            view["ticket"].as_str().expect("a ticket").to_owned()
        })
        .buffer_unordered(8)
        .collect()
        .await
}

/// nginx from Debian's package on a free loopback port, serving one file.
struct Nginx {
    url: String,
    port: u16,
    _dir: TempDir,
    _child: tokio::process::Child,
}

impl Drop for Nginx {
    /// Its workers outlive a killed master: ask the master to stop them all first.
    fn drop(&mut self) {
        let dir = self._dir.0.display().to_string();
        let _ = std::process::Command::new("nginx")
            .args(["-p", &dir, "-c"])
            .arg(self._dir.0.join("nginx.conf"))
            .args(["-s", "stop"])
            .status();
    }
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Nginx {
    fn start(body: &[u8], csp: &str) -> Nginx {
        use std::os::unix::fs::PermissionsExt;
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("strad-bench-nginx-{port}"));
        std::fs::create_dir_all(dir.join("www")).unwrap();
        for path in [dir.clone(), dir.join("www")] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::write(dir.join("www/app.html"), body).unwrap();
        let user = if is_root() { "user root;" } else { "" };
        let d = dir.display();
        let config = format!(
            "{user}
worker_processes auto;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path {d}/client;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  types {{ text/html html; }}
  server {{
    listen 127.0.0.1:{port};
    root {d}/www;
    location / {{
      add_header Content-Security-Policy \"{csp}\" always;
      add_header Cache-Control no-store always;
    }}
  }}
}}
"
        );
        std::fs::write(dir.join("nginx.conf"), config).unwrap();
        let child = tokio::process::Command::new("nginx")
            .args(["-p", &d.to_string(), "-c"])
            .arg(dir.join("nginx.conf"))
            .args(["-g", "daemon off;"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("nginx runs (apt install nginx-light; ./x bench does)");
        Nginx {
            url: format!("http://127.0.0.1:{port}/app.html"),
            port,
            _dir: TempDir(dir),
            _child: child,
        }
    }

    async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
        {
            assert!(Instant::now() < deadline, "nginx did not start");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}
