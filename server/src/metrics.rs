//! Prometheus metrics at `/metrics` (SPEC §13). The code counts through the `metrics` facade
//! (here, and in the console's server code: `app::metrics`); one recorder per process,
//! `metrics-exporter-prometheus` without its own listener, holds the counts, and the route
//! renders them. Gauges that are cheap to read (the database pool, the audit chain, the
//! process's memory) are read at each scrape. Labels take a fixed set of values, a matched
//! route pattern or a server's slug: never a person, a token or a path as requested.
//!
//! Cost per request (`track_http`): its route pattern copied once into an `Arc<str>`, two
//! keys built (a small vector of labels each) and looked up in the recorder's sharded
//! map, an atomic add and a histogram sample pushed without a lock. Nothing is held
//! across the request.

mod access;
mod scrape;

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ::metrics::{Label, counter, describe_counter, describe_gauge, describe_histogram, histogram};
use app::entitlements::policy::Surface;
use app::servers::ssr::client::ToolAnswer;
use axum::Router;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use sqlx::PgPool;

pub use access::may_scrape;

use crate::config::Secret;
use crate::state::ServerState;
use crate::tool_call::CallError;

/// The route label of a request no route matched (static files, unknown paths).
pub const UNMATCHED: &str = "unmatched";

/// Upper bounds of the latency histograms' buckets, in seconds: from a page served from
/// memory to an upstream call near its timeout.
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// How often histogram samples are folded into their buckets between scrapes, so a server
/// nobody scrapes does not hold every sample.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// The process's recorder, installed by the first caller; every `Application` in the
/// process (tests run several) renders the same one.
pub fn recorder() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Suffix("_duration_seconds".into()),
                    LATENCY_BUCKETS,
                )
                .expect("the buckets are not empty")
                .install_recorder()
                .expect("no other metrics recorder is installed");
            describe();
            let upkept = handle.clone();
            std::thread::Builder::new()
                .name("strad-metrics-upkeep".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(UPKEEP_EVERY);
                        upkept.run_upkeep();
                    }
                })
                .expect("the upkeep thread starts");
            handle
        })
        .clone()
}

/// The `HELP` line of each family.
fn describe() {
    describe_counter!(
        "strad_http_requests_total",
        "HTTP requests answered, by route pattern, method and status class."
    );
    describe_histogram!(
        "strad_http_request_duration_seconds",
        "Time to an HTTP response's headers, by route pattern, method and status class."
    );
    describe_counter!(
        "strad_tool_calls_total",
        "Tool calls, by server slug, surface and outcome."
    );
    describe_histogram!(
        "strad_upstream_request_duration_seconds",
        "Time of a request to an MCP server, by server slug and MCP method."
    );
    describe_counter!(
        "strad_upstream_errors_total",
        "Failed requests to MCP servers, by server slug, MCP method and kind of failure."
    );
    describe_counter!(
        "strad_approvals_total",
        "Approvals of writing tools minted, spent and refused."
    );
    describe_counter!(
        "strad_pins_total",
        "App pins written: first pins and refreshes."
    );
    describe_counter!(
        "strad_frame_tickets_total",
        "Frame tickets issued, spent and refused."
    );
    describe_counter!("strad_audit_rows_written_total", "Audit rows appended.");
    describe_gauge!(
        "strad_audit_last_row_id",
        "Id of the newest audit row: the chain's length, less ids of rolled-back appends."
    );
    describe_gauge!("strad_db_pool_size", "Connections the database pool holds.");
    describe_gauge!(
        "strad_db_pool_idle",
        "Connections of the pool that are idle."
    );
    describe_gauge!(
        "strad_db_pool_max",
        "Connections the pool may hold at most."
    );
    describe_gauge!(
        "strad_process_resident_memory_bytes",
        "Resident set size of the strad process."
    );
    describe_gauge!(
        "strad_process_virtual_memory_bytes",
        "Virtual memory size of the strad process."
    );
}

/// What the `/metrics` route needs.
#[derive(Clone)]
struct Scrape {
    handle: PrometheusHandle,
    token: Option<Secret>,
    pool: PgPool,
}

/// `GET /metrics`, outside the console's layers: it reads no session and sets no cookie.
pub fn routes(state: &ServerState) -> Router<ServerState> {
    let scrape = Scrape {
        handle: recorder(),
        token: state.config.metrics.token.clone(),
        pool: state.app.pool.clone(),
    };
    Router::new()
        .route("/metrics", get(render).fallback(not_found))
        .with_state(scrape)
}

/// The metrics, to a loopback peer with no forwarding header or to the configured bearer
/// token; anyone else is answered 404, as if there were no such page.
async fn render(State(scrape): State<Scrape>, request: Request) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    if !may_scrape(peer, request.headers(), scrape.token.as_ref()) {
        return not_found().await;
    }
    scrape::read_gauges(&scrape.pool).await;
    let body = scrape.handle.render();
    (
        [
            (
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            ),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

async fn not_found() -> Response {
    StatusCode::NOT_FOUND.into_response()
}

/// Middleware counting every request: `strad_http_requests_total` and
/// `strad_http_request_duration_seconds` by route pattern (`MatchedPath`, else
/// `UNMATCHED`), method and status class.
pub async fn track_http(request: Request, next: Next) -> Response {
    // The pattern is copied once, and shared by both keys.
    let route = match request.extensions().get::<MatchedPath>() {
        Some(matched) => Label::new("route", Arc::<str>::from(matched.as_str())),
        None => Label::from_static_parts("route", UNMATCHED),
    };
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    http_request(route, &method, response.status(), started);
    response
}

/// Counts one request answered: by route pattern (`route`), method and status class, and
/// its time since `started`. `track_http` counts the console's requests with it, the
/// sandbox origin its own.
pub fn http_request(route: Label, method: &Method, status: StatusCode, started: Instant) {
    let method = Label::from_static_parts("method", method_label(method));
    let status = Label::from_static_parts("status", status_class(status));
    let labels = [route, method, status];
    histogram!("strad_http_request_duration_seconds", labels.iter())
        .record(started.elapsed().as_secs_f64());
    counter!("strad_http_requests_total", labels.iter()).increment(1);
}

/// A method as a label: the standard ones by name, any other as `other`.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

fn status_class(status: StatusCode) -> &'static str {
    match status.as_u16() {
        100..=199 => "1xx",
        200..=299 => "2xx",
        300..=399 => "3xx",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// Counts one tool call (`tool_call::ToolCall::run`, every surface's):
/// `strad_tool_calls_total{slug, surface, outcome}`.
pub fn tool_call(surface: Surface, slug: &str, ran: &Result<ToolAnswer, CallError>) {
    counter!(
        "strad_tool_calls_total",
        "slug" => slug.to_owned(),
        "surface" => surface_label(surface),
        "outcome" => outcome_label(ran),
    )
    .increment(1);
}

fn surface_label(surface: Surface) -> &'static str {
    match surface {
        Surface::App => "app",
        Surface::Host => "host",
        Surface::Playground => "playground",
        Surface::McpClient => "mcp",
    }
}

/// A call's outcome: `ok`, `error` (the tool answered with an error result), or why it
/// did not answer.
fn outcome_label(ran: &Result<ToolAnswer, CallError>) -> &'static str {
    match ran {
        Ok(answer) if answer.result.is_error == Some(true) => "error",
        Ok(_) => "ok",
        Err(CallError::Refused(_)) => "refused",
        Err(CallError::NeedsApproval) => "needs_approval",
        Err(CallError::TooMany) => "rate_limited",
        Err(CallError::NotRecorded) => "not_recorded",
        Err(CallError::Upstream { .. }) => "upstream_error",
        Err(CallError::Cancelled) => "cancelled",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_falls_in_its_class() {
        let cases = [
            (101, "1xx"),
            (200, "2xx"),
            (302, "3xx"),
            (404, "4xx"),
            (503, "5xx"),
        ];
        for (code, class) in cases {
            assert_eq!(status_class(StatusCode::from_u16(code).unwrap()), class);
        }
    }

    #[test]
    fn an_unusual_method_is_labelled_other_and_never_by_its_name() {
        let odd = Method::from_bytes(b"PERSONAL-NAME").unwrap();
        assert_eq!(method_label(&odd), "other");
        assert_eq!(method_label(&Method::POST), "POST");
    }
}
