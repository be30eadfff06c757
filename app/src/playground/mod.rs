//! The playground (SPEC §7): a person calls a server's tools by hand, with a form built from
//! each tool's input schema, and meets its apps as cards.

pub mod schema_form;
mod server_fns;

pub use server_fns::*;

/// POSTs a playground call; the tool's result, or the refusal's message. `abort` cancels the
/// wait (the browser drops the request; strad stops waiting for the server's answer).
#[cfg(feature = "hydrate")]
pub async fn call_tool(
    slug: &str,
    body: &serde_json::Value,
    abort: Option<web_sys::AbortController>,
) -> Result<serde_json::Value, String> {
    let path = format!(
        "/servers/{}/tools/call",
        crate::shell::protected::encode_component(slug)
    );
    let signal = abort.as_ref().map(|a| a.signal());
    crate::apps::bridge::post_json(&path, body, signal.as_ref()).await
}
