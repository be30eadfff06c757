//! Tool calls: direct, through the app route and through `/mcp`, taking turns; the app route
//! with its audit rows flushed before the answer and with upstream calls through rmcp's
//! client; and where an app call's added time goes.

use super::*;

/// The three paths taking turns at 1 and 32 callers, then where the CPU went.
pub async fn three_paths<D, DFut, T, TFut, M, MFut>(
    app: &TestApp,
    node: u32,
    direct: &D,
    through: &T,
    via_mcp: &M,
) where
    D: Fn() -> DFut + Clone + Send + 'static,
    DFut: Future<Output = Result<(), String>> + Send,
    T: Fn() -> TFut + Clone + Send + 'static,
    TFut: Future<Output = Result<(), String>> + Send,
    M: Fn() -> MFut + Clone + Send + 'static,
    MFut: Future<Output = Result<(), String>> + Send,
{
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
        for (path, name) in figures
            .iter_mut()
            .zip(["app tool call", "`/mcp` tool call"])
        {
            let [share, p50, p99] = path.each_mut().map(|list| median(list));
            row.push_str(&cells([share, p50, p99]));
            if concurrency == 1 {
                summary(
                    &format!("{name}: added p50 / p99, 1 caller"),
                    format!("{p50:+.2} / {p99:+.2} ms"),
                    "≤ 0.5 / 2 ms",
                );
            } else {
                let what = format!("{name}: share of direct throughput, {concurrency} callers");
                summary(&what, format!("{share:.0}%"), "≥ 95%");
            }
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
}

/// The app route at one caller, its audit rows flushed as the main instance's are and
/// before the answer.
pub async fn audit_flushed_before_the_answer<D, DFut>(
    app: &TestApp,
    admin: &reqwest::Client,
    node: u32,
    direct: &D,
    flush: &str,
) where
    D: Fn() -> DFut + Clone + Send + 'static,
    DFut: Future<Output = Result<(), String>> + Send,
{
    let through = app_call(app, admin, "get-time", None);
    // The app route at one caller as above (its audit rows flushed as the main instance is
    // set, by default in the background), and through a second strad on the same database
    // whose tool calls also wait for their row's flush
    // (`STRAD_AUDIT_TOOL_CALLS_FLUSH=before_answer`), taking turns with direct: what waiting
    // for the disk adds to each call.
    let strict = spawn_app_with_env(
        app.pool.clone(),
        &[
            ("STRAD_AUDIT_TOOL_CALLS_FLUSH", "before_answer"),
            CONSOLE_CALLS_UNBOUNDED,
        ],
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
        direct,
        [(flush, &through), ("before_answer", &through_strict)],
    )
    .await;
    drop(strict);
}

/// The app route with upstream calls posted directly and through rmcp's client.
pub async fn upstream_calls_through_rmcp<D, DFut>(
    app: &TestApp,
    admin: &reqwest::Client,
    node: u32,
    direct: &D,
    flush: &str,
) where
    D: Fn() -> DFut + Clone + Send + 'static,
    DFut: Future<Output = Result<(), String>> + Send,
{
    let through = app_call(app, admin, "get-time", None);
    // The app route through the main instance, whose tool calls to the upstream are posted
    // straight into the session (`direct.rs`, the default), and through a second strad on the
    // same database making them through rmcp's client (`STRAD_UPSTREAM_TOOL_CALLS=rmcp`),
    // taking turns with direct, at 1 and 32 callers.
    let by_rmcp = spawn_app_with_env(
        app.pool.clone(),
        &[
            ("STRAD_UPSTREAM_TOOL_CALLS", "rmcp"),
            CONSOLE_CALLS_UNBOUNDED,
            ("STRAD_AUDIT_TOOL_CALLS_FLUSH", flush),
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
            direct,
            [("direct POST", &through), ("rmcp", &through_rmcp)],
        )
        .await;
    }
    drop(by_rmcp);
}

/// Where an app call's added time goes, at one caller.
pub async fn where_an_app_calls_time_goes<D, DFut>(
    app: &TestApp,
    admin: &reqwest::Client,
    upstream: &ExampleServer,
    direct: &D,
) where
    D: Fn() -> DFut + Clone + Send + 'static,
    DFut: Future<Output = Result<(), String>> + Send,
{
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
                use app::audit::ssr::writer::{self, AuditEvent};
                let actor = writer::Actor::system();
                writer::append_alone(&pool, &actor, &AuditEvent::SignOut, None)
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
                // A row with an empty payload, as `audit_row`'s.
                let event = writer::Event {
                    actor: writer::Actor::system(),
                    event: writer::AuditEvent::SignOut,
                    slug: None,
                };
                let mut connection = pool.acquire().await.map_err(|e| e.to_string())?;
                writer::append_many(&mut connection, &[&event], writer::Flush::Background)
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        }
    };
    let refused = app_call(app, admin, "no-such-tool", Some(403));
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
}
