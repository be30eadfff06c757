//! The console's server functions, called as the hydrated console calls them, and the
//! registration of MCP servers through them.

use super::TestApp;

/// Calls a server function the way the hydrated console does (form body, JSON answer).
pub async fn server_fn(
    app: &TestApp,
    client: &reqwest::Client,
    name: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    let path = format!("/api/{name}");
    let request = if reads(&path) {
        client.get(app.url(&path)).query(form)
    } else {
        client.post(app.url(&path)).form(form)
    };
    request.send().await.unwrap()
}

/// Whether the server function at `path` is a read (GET): the console's reading functions
/// are, and everything else writes.
pub fn reads(path: &str) -> bool {
    leptos::server_fn::axum::server_fn_paths().any(|(p, method)| p == path && method == "GET")
}

/// The paths of every server function that writes (any method but GET), as registered.
pub fn writing_server_fns() -> Vec<String> {
    let mut paths: Vec<String> = leptos::server_fn::axum::server_fn_paths()
        .filter(|(_, method)| method != "GET")
        .map(|(p, _)| p.to_owned())
        .collect();
    paths.sort();
    paths
}

/// Registers a Streamable HTTP server through the server function (tools approved, and apps
/// when `apps`).
pub async fn register_server(
    app: &TestApp,
    admin: &reqwest::Client,
    slug: &str,
    url: &str,
    apps: bool,
) {
    let capabilities: &[&str] = if apps { &["tools", "apps"] } else { &["tools"] };
    register_server_for(app, admin, slug, url, capabilities).await;
}

/// Registers a server approved for exactly `capabilities` (`tools`, `prompts`,
/// `resources`, `apps`).
pub async fn register_server_for(
    app: &TestApp,
    admin: &reqwest::Client,
    slug: &str,
    url: &str,
    capabilities: &[&str],
) {
    let fields: Vec<String> = capabilities.iter().map(|c| format!("cap_{c}")).collect();
    let mut form = vec![("slug", slug), ("display_name", slug), ("url", url)];
    form.extend(fields.iter().map(|field| (field.as_str(), "on")));
    let response = server_fn(app, admin, "servers/register", &form).await;
    assert_eq!(
        response.status(),
        200,
        "register {slug}: {}",
        response.text().await.unwrap()
    );
}

/// The admin's view of one server.
pub async fn server_detail(
    app: &TestApp,
    admin: &reqwest::Client,
    slug: &str,
) -> serde_json::Value {
    let response = server_fn(app, admin, "servers/get", &[("slug", slug)]).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// Runs discovery now; the refresh outcome.
pub async fn refresh_server(
    app: &TestApp,
    admin: &reqwest::Client,
    slug: &str,
) -> serde_json::Value {
    let response = server_fn(app, admin, "servers/refresh", &[("slug", slug)]).await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}
