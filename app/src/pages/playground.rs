//! `/servers/<slug>`: the playground (SPEC §7). Each tool the person may call, with a form
//! built from its input schema (or raw JSON), a Call button with progress and Cancel, the
//! result (text, images, embedded resources, structured content; bounded, collapsible,
//! copyable), and for an app tool an app card.
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::json;
use crate::pages::ErrorPage;
use crate::playground::playground_tools;
use crate::shell::Protected;

mod bounded_text;
mod content_part;
mod field_error;
mod field_view;
mod result_view;
mod tool_panel;

pub use result_view::ResultView;
use tool_panel::ToolPanel;

#[component]
pub fn PlaygroundPage() -> impl IntoView {
    view! {
        <Title text="Playground" />
        <Protected children=|_| view! { <PlaygroundBody /> } />
    }
}

#[component]
fn PlaygroundBody() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let tools = json::load(slug, playground_tools);
    view! {
        <Suspense fallback=|| view! { <p class="loading" role="status">"Loading the tools…"</p> }>
            {move || Suspend::new(async move {
                match tools.await {
                    Ok(playground) => {
                        let slug = playground.slug.clone();
                        let view_only = playground.view_only;
                        view! {
                            <h1>{playground.display_name.clone()} " " <code>{slug.clone()}</code></h1>
                            <p class="help">"Call this server's tools by hand. Calls run under your authority and are audited."
                                " " <a href=format!("/apps/{slug}")>"Open its app"</a> " · " <a href="/pins">"Your pinned apps"</a></p>
                            {view_only.then(|| view! {
                                <p class="notice" role="status">"This session was opened with a login token: you can look, but not call tools."</p>
                            })}
                            <noscript><p class="notice">"Calling tools here needs JavaScript."</p></noscript>
                            {if playground.tools.is_empty() {
                                view! { <p>"No tools of this server are offered to you here."</p> }.into_any()
                            } else {
                                view! {
                                    <ul class="tools" role="list">
                                        {playground.tools.into_iter().map(|tool| view! {
                                            <li><ToolPanel slug=slug.clone() tool view_only /></li>
                                        }).collect_view()}
                                    </ul>
                                }.into_any()
                            }}
                        }.into_any()
                    }
                    Err(error) => view! { <ErrorPage error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// A safe id fragment for `text` (tool names and pointers can hold anything).
fn id_part(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}
