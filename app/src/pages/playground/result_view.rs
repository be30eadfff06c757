//! A tool's result.

use leptos::prelude::*;
use serde_json::Value;

use super::bounded_text::Bounded;
use super::content_part::ContentPart;

/// A tool's result: each content part, structured content, and the raw JSON; no script of
/// the server's ever runs here (images are shown as images only).
#[component]
pub fn ResultView(result: Value) -> impl IntoView {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let parts = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let structured = result.get("structuredContent").cloned();
    let raw = serde_json::to_string_pretty(&result).unwrap_or_default();
    let copied = RwSignal::new(false);
    let copy = {
        let raw = raw.clone();
        move |_| {
            if let Some(window) = web_sys::window() {
                let _ = window.navigator().clipboard().write_text(&raw);
                copied.set(true);
            }
        }
    };
    view! {
        <section class=if is_error { "result result-error" } else { "result" } aria-label="Result">
            <details open>
                <summary>{if is_error { "Result (the tool reported an error)" } else { "Result" }}</summary>
                {parts.into_iter().map(|part| view! { <ContentPart part /> }).collect_view()}
                {structured.map(|s| view! {
                    <details open>
                        <summary>"Structured content"</summary>
                        <Bounded text=serde_json::to_string_pretty(&s).unwrap_or_default() />
                    </details>
                })}
                <details>
                    <summary>"Raw JSON"</summary>
                    <Bounded text=raw />
                </details>
                <button type="button" on:click=copy>{move || if copied.get() { "Copied" } else { "Copy JSON" }}</button>
            </details>
        </section>
    }
}
