//! strad's MCP client on its own: tool calls, connection reuse, a server that dies in the
//! middle of a call and comes back, a call that hangs, an answer that is not JSON.

mod support;

use std::time::Duration;

use app::servers::ssr::client::{Endpoint, Hub, HubSettings, McpError};
use serde_json::json;
use support::mcp::{TestServer, free_port, npm_bin};

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

fn args(label: &str) -> serde_json::Map<String, serde_json::Value> {
    json!({"label": label}).as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_is_called_and_the_connection_is_reused() {
    let server = TestServer::start().await;
    let hub = hub(Duration::from_secs(10));
    let endpoint = Endpoint::Http {
        url: server.url.clone(),
    };
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
    let endpoint = Endpoint::Http {
        url: server.url.clone(),
    };
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
    let endpoint = Endpoint::Http {
        url: server.url.clone(),
    };
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
    let endpoint = Endpoint::Http {
        url: server.url.clone(),
    };
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
    let endpoint = Endpoint::Http {
        url: server.url.clone(),
    };
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
