//! `/mcp`: an MCP client (rmcp's, over Streamable HTTP) with a person's login token sees
//! the tools and app resources they are entitled to, namespaced per server, calls them, reads
//! the same bytes strad pins; and everything else is refused.

use crate::support::mcp::{ExampleServer, TestServer};
use crate::support::*;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use sqlx::PgPool;

mod plain_calls;
mod progress;
mod sessions;
mod tokens_and_limits;
mod what_a_client_sees;

async fn mint(app: &TestApp, browser: &reqwest::Client) -> (String, String) {
    let minted: Value = server_fn(
        app,
        browser,
        "tokens/mint",
        &[("name", "client"), ("days", "1")],
    )
    .await
    .json()
    .await
    .unwrap();
    (
        minted["secret"].as_str().unwrap().to_owned(),
        minted["token"]["id"].as_str().unwrap().to_owned(),
    )
}

/// rmcp's own Streamable HTTP client transport to `url`, `token` as its Bearer.
fn transport(url: &str, token: &str) -> impl rmcp::transport::Transport<rmcp::RoleClient> + use<> {
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    StreamableHttpClientTransport::from_config(config)
}

async fn client(
    url: &str,
    token: &str,
) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>, String> {
    ().serve(transport(url, token))
        .await
        .map_err(|e| e.to_string())
}

/// The test server registered as `widgets` and granted to the admin, and a login token of
/// theirs.
async fn widgets_and_token(app: &TestApp, admin: &reqwest::Client) -> (TestServer, String) {
    let server = TestServer::start().await;
    register_server(app, admin, "widgets", &server.url, true).await;
    grant(app, admin, "widgets", LOCAL_ADMIN).await;
    let (token, _) = mint(app, admin).await;
    (server, token)
}

async fn next<T>(progress: &mut tokio::sync::mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(10), progress.recv())
        .await
        .expect("a progress notification within 10 s")
        .expect("the client is running")
}

/// A POST to `/mcp` as a client sends it, in `session` when given.
fn post_mcp(
    app: &TestApp,
    token: &str,
    session: Option<&str>,
    body: &Value,
) -> reqwest::RequestBuilder {
    post_mcp_accepting(
        app,
        token,
        session,
        body,
        "application/json, text/event-stream",
    )
}

fn post_mcp_accepting(
    app: &TestApp,
    token: &str,
    session: Option<&str>,
    body: &Value,
    accept: &str,
) -> reqwest::RequestBuilder {
    let mut request = reqwest::Client::new()
        .post(app.url("/mcp"))
        .bearer_auth(token)
        .header("accept", accept)
        .json(body);
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    request
}

/// A client session opened by hand; `notifications/initialized` sent when `initialized`.
async fn session_by_hand(app: &TestApp, token: &str, initialized: bool) -> String {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let response = post_mcp(app, token, None, &initialize)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = response.text().await;
    if initialized {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = post_mcp(app, token, Some(&session), &note)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202);
    }
    session
}

/// The response's content type, and the JSON-RPC message answering `id` in its body (JSON,
/// or the `data:` of an event stream).
async fn answer_to(response: reqwest::Response, id: i64) -> (String, Value) {
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.text().await.unwrap();
    let answer = std::iter::once(body.as_str())
        .chain(body.lines().filter_map(|l| l.strip_prefix("data:")))
        .filter_map(|text| serde_json::from_str::<Value>(text.trim()).ok())
        .find(|message| message["id"] == id)
        .unwrap_or_else(|| panic!("no answer to {id} in {body}"));
    (kind, answer)
}

fn show_widget(id: i64, label: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "widgets__show-widget", "arguments": {"label": label}}})
}
