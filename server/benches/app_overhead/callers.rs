//! The requests the benchmark makes over and over: MCP client sessions, strad's own upstream
//! client, app tool calls as the console's page makes them, and frame tickets.

use super::*;

pub type McpSession = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// `count` MCP sessions over the HTTP client strad uses upstream (rmcp's own default client
/// opens a connection per request: see app/src/servers/ssr/http.rs).
pub async fn mcp_sessions(url: &str, token: Option<&str>, count: usize) -> Vec<McpSession> {
    use rmcp::ServiceExt;
    let mut sessions = Vec::new();
    for _ in 0..count {
        let transport = app::servers::ssr::http::transport(url, token);
        sessions.push(().serve(transport).await.expect("initialize"));
    }
    sessions
}

/// A request that calls `tool` on the next session in turn.
pub fn round_robin<H: rmcp::ClientHandler>(
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
pub fn hub_caller(
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
pub fn app_call(
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
pub async fn mint_tickets(
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
