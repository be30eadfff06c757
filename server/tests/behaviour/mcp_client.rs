//! strad's MCP client on its own: tool calls, connection reuse, a server that dies in the
//! middle of a call and comes back, a call that hangs, an answer that is not JSON.

use std::time::Duration;

use crate::support::mcp::{TestServer, free_port, npm_bin};
use app::servers::ssr::client::{Endpoint, Hub, HubSettings, McpError};
use serde_json::json;

fn hub(timeout: Duration) -> Hub {
    let (changes, _changed) = tokio::sync::mpsc::unbounded_channel();
    Hub::new(
        HubSettings {
            request_timeout: timeout,
            ..HubSettings::default()
        },
        changes,
    )
}

/// Where `server` is reached over Streamable HTTP.
fn http(server: &TestServer) -> Endpoint {
    Endpoint::Http {
        url: server.url.clone(),
    }
}

fn args(label: &str) -> serde_json::Map<String, serde_json::Value> {
    json!({"label": label}).as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_is_called_and_the_connection_is_reused() {
    let server = TestServer::start().await;
    let hub = hub(Duration::from_secs(10));
    let endpoint = http(&server);
    for label in ["one", "two", "three"] {
        let result = hub
            .call_tool("t", &endpoint, "show-widget", args(label))
            .await
            .unwrap();
        assert_eq!(result["content"][0]["text"], format!("widget:{label}"));
        assert_eq!(result["structuredContent"]["label"], label);
    }
    let state = server.state().await.unwrap();
    assert_eq!(
        state["sessions"].as_array().unwrap().len(),
        1,
        "one session for three calls: {state}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_error_from_the_server_is_reported_as_the_servers_answer() {
    let server = TestServer::start().await;
    let hub = hub(Duration::from_secs(10));
    let endpoint = http(&server);
    let err = hub
        .call_tool("t", &endpoint, "no-such-tool", args("x"))
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpError::Server(ref m) if m.contains("no-such-tool")),
        "{err:?}"
    );
    // The connection is still good.
    hub.call_tool("t", &endpoint, "show-widget", args("after"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_call_fails_that_call_and_the_next_call_after_restart_works() {
    let port = free_port();
    let mut server = TestServer::start_on(port).await;
    let hub = hub(Duration::from_secs(10));
    let endpoint = http(&server);
    hub.call_tool("t", &endpoint, "show-widget", args("before"))
        .await
        .unwrap();

    server
        .control(json!({"fault": {"kind": "die", "on": "tools/call"}}))
        .await;
    let err = hub
        .call_tool("t", &endpoint, "show-widget", args("dies"))
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Transport(_)), "{err:?}");
    server.wait_exit().await;

    let _restarted = TestServer::start_on(port).await;
    let result = hub
        .call_tool("t", &endpoint, "show-widget", args("again"))
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "widget:again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_hangs_times_out_and_the_next_call_works() {
    let server = TestServer::start().await;
    let hub = hub(Duration::from_secs(1));
    let endpoint = http(&server);
    server
        .control(json!({"fault": {"kind": "hang", "on": "tools/call"}}))
        .await;
    let err = hub
        .call_tool("t", &endpoint, "show-widget", args("hang"))
        .await
        .unwrap_err();
    assert_eq!(err, McpError::Timeout(Duration::from_secs(1)));
    server.control(json!({"fault": null})).await;
    hub.call_tool("t", &endpoint, "show-widget", args("after"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_that_is_not_json_is_an_error_and_the_next_call_works() {
    let server = TestServer::start().await;
    let hub = hub(Duration::from_secs(10));
    let endpoint = http(&server);
    server
        .control(json!({"fault": {"kind": "garbage", "on": "tools/call"}}))
        .await;
    let err = hub
        .call_tool("t", &endpoint, "show-widget", args("garbage"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not valid JSON-RPC"), "{err}");
    server.control(json!({"fault": null})).await;
    hub.call_tool("t", &endpoint, "show-widget", args("after"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_is_started_and_called() {
    let hub = hub(Duration::from_secs(30));
    let endpoint = Endpoint::Stdio {
        command: vec![npm_bin("mcp-server-basic-vanillajs"), "--stdio".into()],
    };
    let result = hub
        .call_tool("clock", &endpoint, "get-time", serde_json::Map::new())
        .await
        .unwrap();
    assert!(result["structuredContent"]["time"].is_string(), "{result}");
    let tools = hub.list_tools("clock", &endpoint).await.unwrap();
    assert!(tools.iter().any(|t| t["name"] == "get-time"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_command_that_does_not_exist_is_a_clear_connect_error() {
    let hub = hub(Duration::from_secs(10));
    let endpoint = Endpoint::Stdio {
        command: vec!["/nonexistent/strad-test-server".into()],
    };
    let err = hub.list_tools("ghost", &endpoint).await.unwrap_err();
    assert!(matches!(err, McpError::Connect(_)), "{err:?}");
}

// Tool calls to an HTTP server are posted straight into the session rmcp opened
// (`direct.rs`): their JSON-RPC ids are strad's own strings, rmcp's are numbers.

fn hub_listening(settings: HubSettings) -> (Hub, tokio::sync::mpsc::UnboundedReceiver<String>) {
    let (changes, changed) = tokio::sync::mpsc::unbounded_channel();
    (Hub::new(settings, changes), changed)
}

fn settings() -> HubSettings {
    HubSettings {
        request_timeout: Duration::from_secs(10),
        ..HubSettings::default()
    }
}

/// The JSON-RPC id of the tool's latest call, as the server saw it.
async fn last_call_id(server: &TestServer, tool: &str) -> serde_json::Value {
    server.state().await.unwrap()["callIds"][tool].clone()
}

fn posted_directly(id: &serde_json::Value) -> bool {
    id.as_str().is_some_and(|id| id.starts_with("strad-"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_call_answers_the_servers_ping_and_passes_on_progress_and_list_changes() {
    let server = TestServer::start().await;
    server
        .control(json!({"addTool": {"name": "chatty",
            "chatter": {"ping": true, "listChanged": true},
            "progress": {"steps": 2}}}))
        .await;
    let (hub, mut changed) = hub_listening(settings());
    let endpoint = http(&server);
    let (sink, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let answer = hub
        .call_tool_reporting("t", &endpoint, "chatty", serde_json::Map::new(), Some(sink))
        .await
        .unwrap();
    assert_eq!(
        answer.json,
        r#"{"content":[{"type":"text","text":"chatty:{}"}]}"#
    );
    // Both arrived on the call's stream before its answer, so both are here already.
    let steps: Vec<f64> = std::iter::from_fn(|| progress.try_recv().ok())
        .map(|p| p.progress)
        .collect();
    assert_eq!(steps, [1.0, 2.0]);
    assert_eq!(changed.try_recv().unwrap(), "t");
    let state = server.state().await.unwrap();
    assert_eq!(state["pings"], 1, "the server's ping was answered: {state}");
    assert!(posted_directly(&state["callIds"]["chatty"]), "{state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_call_is_answered_by_json_too() {
    let server = TestServer::json_responses().await;
    let (hub, _changed) = hub_listening(settings());
    let endpoint = http(&server);
    for label in ["one", "two"] {
        let result = hub
            .call_tool("t", &endpoint, "show-widget", args(label))
            .await
            .unwrap();
        assert_eq!(result["content"][0]["text"], format!("widget:{label}"));
    }
    assert!(posted_directly(&last_call_id(&server, "show-widget").await));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_whose_stream_the_server_closes_is_resumed_for_its_answer() {
    let server = TestServer::resumable().await;
    server
        .control(json!({"addTool": {"name": "polled", "chatter": {"closeStream": true}}}))
        .await;
    let (hub, _changed) = hub_listening(settings());
    let endpoint = http(&server);
    let result = hub
        .call_tool("t", &endpoint, "polled", serde_json::Map::new())
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "polled:{}");
    let state = server.state().await.unwrap();
    assert_eq!(state["calls"]["polled"], 1, "run once: {state}");
    assert!(posted_directly(&state["callIds"]["polled"]), "{state}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_the_server_forgot_is_opened_again_and_the_call_runs_once() {
    let server = TestServer::start().await;
    let (hub, _changed) = hub_listening(settings());
    let endpoint = http(&server);
    hub.call_tool("t", &endpoint, "show-widget", args("before"))
        .await
        .unwrap();
    assert!(posted_directly(&last_call_id(&server, "show-widget").await));
    server.control(json!({"forgetSessions": true})).await;
    let result = hub
        .call_tool("t", &endpoint, "show-widget", args("after"))
        .await
        .unwrap();
    assert_eq!(result["content"][0]["text"], "widget:after");
    let state = server.state().await.unwrap();
    assert_eq!(
        state["calls"]["show-widget"], 2,
        "each call ran once: {state}"
    );
    assert!(
        state["callIds"]["show-widget"].is_number(),
        "the 404 handed the call to rmcp, which opened a new session: {state}"
    );
    assert_eq!(state["sessions"].as_array().unwrap().len(), 1, "{state}");
    hub.call_tool("t", &endpoint, "show-widget", args("later"))
        .await
        .unwrap();
    assert!(
        posted_directly(&last_call_id(&server, "show-widget").await),
        "direct again, in the new session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_direct_calls_off_tool_calls_go_through_rmcp() {
    let server = TestServer::start().await;
    let (hub, _changed) = hub_listening(HubSettings {
        direct_tool_calls: false,
        ..settings()
    });
    let endpoint = http(&server);
    hub.call_tool("t", &endpoint, "show-widget", args("x"))
        .await
        .unwrap();
    assert!(last_call_id(&server, "show-widget").await.is_number());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_answer_over_the_limit_is_refused_and_the_next_call_works() {
    let server = TestServer::start().await;
    server
        .control(json!({"addTool": {"name": "big",
            "result": {"content": [{"type": "text", "text": "x".repeat(4000)}]}}}))
        .await;
    let (hub, _changed) = hub_listening(HubSettings {
        response_limit: 1024,
        ..settings()
    });
    let endpoint = http(&server);
    let err = hub
        .call_tool("t", &endpoint, "big", serde_json::Map::new())
        .await
        .unwrap_err();
    assert_eq!(err, McpError::TooLarge { limit: 1024 });
    assert!(posted_directly(&last_call_id(&server, "big").await));
    hub.call_tool("t", &endpoint, "show-widget", args("after"))
        .await
        .unwrap();
}
