//! The app surface's routes: the frame serves the person's pin under the exact CSP, and the
//! tool-call route refuses everything SPEC §8 refuses — with nothing called upstream.

use crate::support::mcp::TestServer;
use crate::support::*;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::time::Duration;

mod authority;
mod frames_and_pins;
mod playground;
mod sandbox_origin;
mod tool_calls;
mod upstream_connections;

/// The app session for one frame load, as the console issues it when it opens the app.
async fn ticket(app: &TestApp, browser: &reqwest::Client, slug: &str) -> Option<String> {
    let response = server_fn(app, browser, "apps/open", &[("slug", slug)]).await;
    if !response.status().is_success() {
        return None;
    }
    let view: Value = response.json().await.unwrap();
    view["ticket"].as_str().map(str::to_owned)
}

/// Loads the frame with `ticket` as a browser loads a frame.
async fn frame_with(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    ticket: &str,
) -> reqwest::Response {
    browser
        .get(app.url(&format!("/apps/{slug}/frame/{ticket}")))
        .header("sec-fetch-site", "same-origin")
        .header("sec-fetch-dest", "iframe")
        .send()
        .await
        .unwrap()
}

/// Loads the frame as the host does: a fresh app session each time (a made-up one when
/// the console would not open the app).
async fn frame(app: &TestApp, browser: &reqwest::Client, slug: &str) -> reqwest::Response {
    let ticket = ticket(app, browser, slug)
        .await
        .unwrap_or_else(|| format!("{:032x}.{:032x}", rand::random::<u128>(), 0));
    frame_with(app, browser, slug, &ticket).await
}

/// An app's tool call, as the bridge posts it.
async fn call(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    body: Value,
) -> reqwest::Response {
    post_from_console(app, browser, &format!("/apps/{slug}/tools/call"), body).await
}

/// The opening call of `widget`'s app, as the host posts it.
async fn opening_call(app: &TestApp, browser: &reqwest::Client) -> reqwest::Response {
    post_from_console(
        app,
        browser,
        "/apps/widget/opening-call",
        json!({"uri": "ui://test/widget.html"}),
    )
    .await
}

/// A playground call, as the playground page posts it.
async fn play(
    app: &TestApp,
    browser: &reqwest::Client,
    slug: &str,
    body: Value,
) -> reqwest::Response {
    post_from_console(app, browser, &format!("/servers/{slug}/tools/call"), body).await
}
