//! The server's island actions, drawn by the host under its app (SPEC §8: a Send, a
//! Confirm or a Delete belongs to the host, not to the app), and what the last decision did.

use leptos::prelude::*;

use crate::apps::host_view::HostView;

/// One button per action the console vetted and drew; `press` gets its index among them.
#[component]
pub fn IslandActions(view: HostView, server: String, press: Callback<usize>) -> impl IntoView {
    let drawn = move || {
        view.actions
            .with(|a| a.iter().filter(|a| a.drawn).cloned().collect::<Vec<_>>())
    };
    let label = format!("Actions from {server}");
    view! {
        {move || {
            let actions = drawn();
            (!actions.is_empty()).then(|| view! {
                <div class="island-actions" role="group" aria-label=label.clone()>
                    {actions.into_iter().enumerate().map(|(index, action)| {
                        let class = if action.kind == "danger" { "danger" } else { "primary" };
                        let kind = if action.kind == "danger" { "danger" } else { "primary" };
                        view! {
                            <button type="button" class=class data-kind=kind on:click=move |_| press.run(index)>
                                {action.label}
                            </button>
                        }
                    }).collect_view()}
                </div>
            })
        }}
        {move || view.outcome.get().map(|said| view! { <p class="approval-outcome" role="status">{said}</p> })}
    }
}
