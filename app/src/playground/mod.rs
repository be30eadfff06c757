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
    use leptos::wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_credentials(web_sys::RequestCredentials::SameOrigin);
    let headers = web_sys::Headers::new().map_err(|_| "headers")?;
    let _ = headers.set("content-type", "application/json");
    init.set_headers(&headers);
    init.set_body(&body.to_string().into());
    if let Some(abort) = &abort {
        init.set_signal(Some(&abort.signal()));
    }
    let path = format!(
        "/servers/{}/tools/call",
        crate::shell::protected::encode_component(slug)
    );
    let response = JsFuture::from(window.fetch_with_str_and_init(&path, &init))
        .await
        .map_err(|_| "the call was cancelled, or the console could not be reached".to_string())?;
    let response: web_sys::Response = response.dyn_into().map_err(|_| "no response")?;
    let text = JsFuture::from(response.text().map_err(|_| "no body")?)
        .await
        .map_err(|_| "no body")?
        .as_string()
        .unwrap_or_default();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    if response.ok() {
        Ok(value)
    } else {
        Err(value["error"]
            .as_str()
            .unwrap_or("the call was refused")
            .to_owned())
    }
}
