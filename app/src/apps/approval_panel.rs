//! The panel the host draws outside the frame when something waits for the person's
//! decision (SPEC §8): what exactly will happen, and Approve / Decline as the host's own
//! controls. Focus moves into it and the app behind it is inert; Esc declines. Everything
//! shown is text (never markup), bounded, from the bridge's own reading of the request.

use leptos::html::Section;
use leptos::prelude::*;

use crate::apps::host_view::{Ask, Choice, HostView, Prompt};

/// The first waiting prompt, if any. `decide` is called within the click or key press.
#[component]
pub fn ApprovalPanel(view: HostView, decide: Callback<(u64, Choice)>) -> impl IntoView {
    let current = Memo::new(move |_| view.prompts.with(|p| p.first().cloned()));
    let waiting = move || view.prompts.with(Vec::len);
    let panel: NodeRef<Section> = NodeRef::new();
    // Approve is armed a moment after its prompt appears (the bridge checks it too); armed
    // names the prompt, so a prompt that replaces another never inherits its arming.
    let armed: RwSignal<Option<u64>> = RwSignal::new(None);
    Effect::new(move |shown: Option<Option<u64>>| {
        let now_shown = current.with(|p| p.as_ref().map(|p| p.id));
        if now_shown != shown.flatten()
            && let Some(prompt) = current.get_untracked()
        {
            let wait = (prompt.armed_at - js_now()).max(0.0) as u64;
            let id = prompt.id;
            set_timeout(
                move || armed.set(Some(id)),
                std::time::Duration::from_millis(wait + 10),
            );
            // Focus moves into the panel (onto it, not onto Approve: a held Enter or Space
            // must not land on a control).
            request_animation_frame(move || {
                if let Some(panel) = panel.get_untracked() {
                    let _ = panel.focus();
                }
            });
        }
        now_shown
    });
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Escape"
            && let Some(prompt) = current.get_untracked()
        {
            ev.prevent_default();
            ev.stop_propagation();
            decide.run((prompt.id, Choice::Decline));
        } else if ev.key() == "Tab" {
            // A modal panel keeps focus among its own controls.
            #[cfg(feature = "hydrate")]
            if let Some(panel) = panel.get_untracked() {
                keep_focus_within(&panel, &ev);
            }
        }
    };
    move || {
        current.get().map(|prompt| {
            let id = prompt.id;
            let stale = prompt.stale.clone();
            let more = waiting().saturating_sub(1);
            view! {
                <section
                    node_ref=panel
                    class="approval-panel"
                    role="dialog"
                    aria-modal="true"
                    aria-labelledby="approval-title"
                    aria-describedby="approval-what"
                    data-prompt=prompt.ask.kind()
                    tabindex="-1"
                    on:keydown=on_keydown
                >
                    <h2 id="approval-title">{title(&prompt)}</h2>
                    <div id="approval-what">{details(&prompt)}</div>
                    {stale.clone().map(|why| view! { <p class="notice notice-error" role="alert">{why}</p> })}
                    {(more > 0).then(|| view! { <p class="muted">{format!("{more} more waiting after this one.")}</p> })}
                    <div class="actions">
                        {stale.is_none().then(|| view! {
                            <button
                                type="button"
                                class="primary"
                                prop:disabled=move || armed.get() != Some(id)
                                on:click=move |_| decide.run((id, Choice::Approve))
                            >"Approve"</button>
                        })}
                        <button type="button" on:click=move |_| decide.run((id, Choice::Decline))>
                            {if stale.is_some() { "Dismiss" } else { "Decline" }}
                        </button>
                    </div>
                </section>
            }
        })
    }
}

/// Tab past the last enabled button goes to the first, Shift+Tab before the first to the
/// last.
#[cfg(feature = "hydrate")]
fn keep_focus_within(panel: &web_sys::HtmlElement, ev: &leptos::ev::KeyboardEvent) {
    use leptos::wasm_bindgen::JsCast;
    let Ok(buttons) = panel.query_selector_all("button:not([disabled])") else {
        return;
    };
    let buttons: Vec<web_sys::HtmlElement> = (0..buttons.length())
        .filter_map(|i| buttons.item(i))
        .filter_map(|node| node.dyn_into().ok())
        .collect();
    let (Some(first), Some(last)) = (buttons.first(), buttons.last()) else {
        ev.prevent_default();
        return;
    };
    let active = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.active_element());
    let on = |b: &web_sys::HtmlElement| {
        active
            .as_ref()
            .is_some_and(|a| a.is_same_node(Some(b.unchecked_ref())))
    };
    let on_panel = active
        .as_ref()
        .is_some_and(|a| a.is_same_node(Some(panel.unchecked_ref())));
    if ev.shift_key() && (on(first) || on_panel) {
        ev.prevent_default();
        let _ = last.focus();
    } else if !ev.shift_key() && on(last) {
        ev.prevent_default();
        let _ = first.focus();
    }
}

fn js_now() -> f64 {
    #[cfg(feature = "hydrate")]
    {
        js_sys::Date::now()
    }
    #[cfg(not(feature = "hydrate"))]
    {
        0.0
    }
}

fn title(prompt: &Prompt) -> String {
    match &prompt.ask {
        Ask::ToolCall {
            tool,
            server,
            from_action: true,
            ..
        } => format!("Run the action {tool} on {server}?"),
        Ask::ToolCall { tool, server, .. } => {
            format!("The app asks to run {tool} on {server}, which changes things")
        }
        Ask::OpenLink { .. } => "The app asks to open a link".into(),
        Ask::Download { .. } => "The app asks to save files".into(),
        Ask::Clipboard { .. } => "The app asks to copy text".into(),
    }
}

fn details(prompt: &Prompt) -> AnyView {
    match prompt.ask.clone() {
        Ask::ToolCall {
            server,
            tool,
            title,
            description,
            arguments,
            ..
        } => view! {
            <dl class="approval-facts">
                <dt>"Server"</dt><dd data-field="server">{server}</dd>
                <dt>"Tool"</dt>
                <dd><code data-field="tool">{tool}</code>{title.map(|t| view! { " — " {t} })}</dd>
                <dt>"What it does"</dt>
                <dd data-field="description">{if description.is_empty() { "The server does not say.".to_string() } else { description }}</dd>
                <dt>"With these arguments"</dt>
                <dd><pre data-field="arguments">{arguments}</pre></dd>
            </dl>
        }
        .into_any(),
        Ask::OpenLink {
            url,
            host,
            host_ascii,
        } => {
            let encoded = (host != host_ascii).then(|| {
                view! { <dt>"Host, as encoded"</dt><dd><code data-field="host-ascii">{host_ascii.clone()}</code></dd> }
            });
            view! {
                <p>"This link's host is not one this server's links open to without asking."</p>
                <dl class="approval-facts">
                    <dt>"Host"</dt><dd><strong data-field="host">{host}</strong></dd>
                    {encoded}
                    <dt>"Full address"</dt><dd><pre data-field="url">{url}</pre></dd>
                </dl>
            }
            .into_any()
        }
        Ask::Download { files } => view! {
            <ul class="approval-files" data-field="files">
                {files.into_iter().map(|f| view! {
                    <li><code>{f.name}</code> " (" {f.content_type} {f.size.map(|s| format!(", {s} bytes"))} ")"</li>
                }).collect_view()}
            </ul>
        }
        .into_any(),
        Ask::Clipboard { text } => view! {
            <p>"Copy this text to your clipboard:"</p>
            <pre data-field="text">{text}</pre>
        }
        .into_any(),
    }
}
