//! One content part of a result: text, an image, an embedded resource, a link or audio.

use leptos::prelude::*;
use serde_json::Value;

use super::bounded_text::Bounded;

#[component]
pub(super) fn ContentPart(part: Value) -> impl IntoView {
    let text = |key: &str| {
        part.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match text("type").as_str() {
        "text" => view! { <Bounded text=text("text") /> }.into_any(),
        "image" => {
            let mime = text("mimeType");
            let data = text("data");
            let shown = matches!(mime.as_str(), "image/png" | "image/jpeg" | "image/gif" | "image/webp")
                && data.len() <= 4 * 1024 * 1024
                && data.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
            if shown {
                view! { <img class="result-image" alt="Image returned by the tool" src=format!("data:{mime};base64,{data}") /> }.into_any()
            } else {
                view! { <p class="help">{format!("An image ({mime}) that is not shown here.")}</p> }.into_any()
            }
        }
        "resource" => {
            let resource = part.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or_default().to_owned();
            let body = resource.get("text").and_then(Value::as_str).map(str::to_owned);
            view! {
                <div class="result-resource">
                    <p>"Embedded resource " <code>{uri}</code></p>
                    {match body {
                        Some(body) => view! { <Bounded text=body /> }.into_any(),
                        None => view! { <p class="help">"Binary content, not shown."</p> }.into_any(),
                    }}
                </div>
            }.into_any()
        }
        "resource_link" => view! { <p>"Resource " <code>{text("uri")}</code></p> }.into_any(),
        "audio" => view! { <p class="help">{format!("Audio ({}), not played here.", text("mimeType"))}</p> }.into_any(),
        _ => view! { <Bounded text=serde_json::to_string_pretty(&part).unwrap_or_default() /> }.into_any(),
    }
}
