//! Benchmark (`./x bench`, or `cargo bench -p strad-server --bench app_overhead`): what strad
//! adds to an app's tool call, and how fast the frame route serves a 300 KiB app beside nginx.
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
//!   port) serving the very bytes strad served, with the same load generator; both are asked
//!   as a browser asks (`Accept-Encoding`) and send the same gzip; then the same frames from
//!   a second instance with a sandbox origin (`STRAD_SANDBOX_ORIGIN`), whose frame route has
//!   no session layer.
//!
//! The paths compared take turns, several rounds, so that the machine's slow moments fall on
//! each; the median round gives the figures. While the calls run, the CPU time of strad's
//! threads, the load generator, the upstream Node server and PostgreSQL is read from `/proc`.
//! strad runs as many worker threads as the binary would (`TOKIO_WORKER_THREADS`, else one
//! fewer than the cores, at least one). The figures go in docs/benchmarks.md; nothing here
//! asserts a time.

#[allow(
    dead_code,
    unused_imports,
    reason = "the benchmarks use a few of the tests' helpers"
)]
#[path = "../../tests/behaviour/support/mod.rs"]
mod support;

#[path = "../support/fresh_database.rs"]
mod fresh_database;

mod callers;
mod cpu;
mod database;
mod frame_route;
mod measure;
mod nginx;
mod summary;
mod tool_calls;
mod wrk;

use std::future::Future;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use sqlx::PgPool;

use callers::*;
use cpu::*;
use database::*;
use fresh_database::FreshDatabase;
use measure::*;
use nginx::*;
use summary::summary;
use support::mcp::{ExampleServer, TestServer, free_port};
use support::*;
use wrk::{Run, Wrk};

/// Calls per path in each round, from one caller and from 32. The upstream stalls now and
/// then for 100–250 ms under 32 callers (Node's own pauses, seen on the direct path too);
/// rounds of several seconds keep one stall from deciding a round's share.
pub const CALLS: usize = 1_500;
pub const CALLS_AT_32: usize = 4_500;
pub const FRAMES: usize = 3_000;

/// Turns the paths take (tool calls: direct, app route, `/mcp`; frames: strad, nginx).
pub const ROUNDS: usize = 5;
pub const APP_BYTES: usize = 300 * 1024;

/// The app route's calls per person and second, 20 by default: the benchmark's one person
/// makes thousands, on every strad it starts.
pub const CONSOLE_CALLS_UNBOUNDED: (&str, &str) = ("STRAD_TOOL_CALLS_PER_SECOND", "100000");

/// Runs on one thread, as the test it replaces did under `#[sqlx::test]`: the load generator
/// is this thread, strad runs on its own runtime beside it.
fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let database = FreshDatabase::create("app_overhead").await;
        app_tool_calls_and_the_frame_route(database.pool.clone()).await;
        database.drop().await;
    });
}

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
            CONSOLE_CALLS_UNBOUNDED,
            ("STRAD_MCP_SESSIONS_PER_MINUTE", "1000"),
            ("STRAD_AUDIT_TOOL_CALLS_FLUSH", &flush),
            // The frame route's tickets are all minted before its rounds start.
            ("STRAD_FRAMES_UNLOADED_PER_PERSON", "1000000"),
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
    // For a profiler: `STRAD_BENCH_ONLY=app|mcp|refused|direct` runs only that path
    // (`refused`: an app call refused by policy; `direct`: the upstream without strad),
    // 15 000 calls, from 32 callers or with `:1` from one;
    // `STRAD_BENCH_ONLY=frames` runs only the frame route beside nginx, and
    // `STRAD_BENCH_ONLY=calls` only the tool calls' table (direct, app route, `/mcp`).
    if let Ok(only) = std::env::var("STRAD_BENCH_ONLY") {
        let node = upstream.pid().expect("the upstream server runs");
        if only == "frames" {
            frame_route::beside_nginx(&app, &admin, node).await;
            return;
        }
        if only == "calls" {
            tool_calls::three_paths(&app, node, &direct, &through, &via_mcp).await;
            return;
        }
        eprintln!("profiling window: pid {}", std::process::id());
        let (path, callers) = match only.split_once(':') {
            Some((path, "1")) => (path, 1),
            _ => (only.as_str(), 32),
        };
        let total = 10 * CALLS;
        let f = match path {
            "mcp" => measure(total, callers, via_mcp).await,
            "direct" => measure(total, callers, direct).await,
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
    let node = upstream.pid().expect("the upstream server runs");
    tool_calls::three_paths(&app, node, &direct, &through, &via_mcp).await;
    tool_calls::audit_flushed_before_the_answer(&app, &admin, node, &direct, &flush).await;
    tool_calls::upstream_calls_through_rmcp(&app, &admin, node, &direct, &flush).await;
    tool_calls::where_an_app_calls_time_goes(&app, &admin, &upstream, &direct).await;
    frame_route::beside_nginx(&app, &admin, node).await;
}
