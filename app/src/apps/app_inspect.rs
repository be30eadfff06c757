//! Inspect, under a running app: the server's actions the host did not draw, with why, and
//! what the page logged (`notifications/message`), drawn while Inspect is open.

use leptos::prelude::*;

use crate::apps::host_view::HostView;

#[component]
pub fn AppInspect(view: HostView) -> impl IntoView {
    let refused = move || {
        view.actions
            .with(|a| a.iter().filter(|a| !a.drawn).cloned().collect::<Vec<_>>())
    };
    // The page's log is drawn only while Inspect is open: a page may log 200 lines a second,
    // and each line redraws the list, which held the bridge long enough to delay a request
    // behind a burst by seconds.
    let open = RwSignal::new(false);
    let toggled = move |ev: leptos::ev::Event| {
        open.set(event_target::<web_sys::Element>(&ev).has_attribute("open"));
    };
    view! {
        <details class="app-inspect" on:toggle=toggled>
            <summary>"Inspect"</summary>
            <h3>"Actions not drawn"</h3>
            {move || {
                let refused = refused();
                if refused.is_empty() {
                    view! { <p class="muted">"None: every action the server proposed was drawn."</p> }.into_any()
                } else {
                    view! {
                        <ul class="refused-actions">
                            {refused.into_iter().map(|a| {
                                let label = if a.label.is_empty() { "(no label)".to_string() } else { a.label };
                                view! { <li><strong>{label}</strong> " — " {a.why.unwrap_or_default()}</li> }
                            }).collect_view()}
                        </ul>
                    }.into_any()
                }
            }}
            <h3>"Messages from the app"</h3>
            {move || if !open.get() {
                // Closed, the closure reads nothing else: a logged line costs nothing.
                view! { <p class="muted">"None yet."</p> }.into_any()
            } else { view.log.with(|log| if log.is_empty() {
                view! { <p class="muted">"None yet."</p> }.into_any()
            } else {
                view! {
                    <ol class="app-log">
                        {log.iter().cloned().map(|line| view! {
                            <li data-level=line.level.clone()>
                                <time>{line.at}</time> " " <strong>{line.level.clone()}</strong>
                                {line.logger.map(|l| view! { " " <code>{l}</code> })}
                                " " <span class="log-data">{line.data}</span>
                            </li>
                        }).collect_view()}
                    </ol>
                }.into_any()
            })}}
        </details>
    }
}
