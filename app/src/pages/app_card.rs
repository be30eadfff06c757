//! The app card under an app tool's result in the playground (SPEC §7): Load app, Open as
//! structure, Inspect, Refresh pinned resource, Close, Revoke. Loading pins (first time) and
//! opens the pinned copy in the same sandboxed frame and bridge as `/apps/<slug>`, and the
//! app receives the input and result of the call that produced the card.

use leptos::html::Button;
use leptos::prelude::*;
use serde_json::Value;

use crate::apps::frame::{AppFrame, FrameHandle, Opening};
use crate::apps::{AppStatus, AppView, open_app};
use crate::pages::playground::ResultView;
use crate::playground::{PinSummary, pin_of, revoke_pin};

#[component]
pub fn AppCard(
    slug: String,
    uri: String,
    tool: String,
    arguments: Value,
    result: Value,
) -> impl IntoView {
    let pin = RwSignal::new(None::<PinSummary>);
    let loaded = RwSignal::new(None::<AppView>);
    let notice = RwSignal::new(None::<(bool, String)>);
    let structure = RwSignal::new(false);
    let inspect = RwSignal::new(false);
    let revoked = RwSignal::new(false);
    let busy = RwSignal::new(false);
    let handle = FrameHandle::default();
    let load_button: NodeRef<Button> = NodeRef::new();
    let traffic = RwSignal::new((0u64, 0u64));

    let refresh_pin = {
        let (slug, uri) = (slug.clone(), uri.clone());
        move || {
            let (slug, uri) = (slug.clone(), uri.clone());
            leptos::task::spawn_local(async move {
                if let Ok(found) = pin_of(slug, uri).await {
                    pin.set(found);
                }
            });
        }
    };
    // What the card knows before anything is loaded.
    #[cfg(feature = "hydrate")]
    {
        let refresh_pin = refresh_pin.clone();
        Effect::new(refresh_pin);
    }

    let open = {
        let (slug, uri, refresh_pin) = (slug.clone(), uri.clone(), refresh_pin.clone());
        move |again: bool| {
            let (slug, uri, refresh_pin) = (slug.clone(), uri.clone(), refresh_pin.clone());
            busy.set(true);
            leptos::task::spawn_local(async move {
                match open_app(slug, Some(uri), Some(again)).await {
                    Ok(view) if view.status == AppStatus::Ready => {
                        revoked.set(false);
                        notice.set(
                            again.then(|| (false, "Pinned the server's current copy.".to_string())),
                        );
                        loaded.set(Some(view));
                    }
                    Ok(view) => {
                        let why = match view.status {
                            AppStatus::Corrupt => "Your pinned copy is corrupt, so the app is unavailable. Refresh pinned resource to pin the server's copy; Open as structure still works.".to_string(),
                            AppStatus::Unavailable(why) => format!("The app is unavailable: {why}"),
                            AppStatus::NoApp => "This server has no such app.".to_string(),
                            _ => "The app cannot be opened from here.".to_string(),
                        };
                        notice.set(Some((true, why)));
                    }
                    Err(error) => notice.set(Some((true, error.to_string()))),
                }
                busy.set(false);
                refresh_pin();
            });
        }
    };
    let load = {
        let open = open.clone();
        move |_| open(false)
    };
    let refresh = {
        let (open, handle) = (open.clone(), handle.clone());
        move |_| {
            let (open, handle) = (open.clone(), handle.clone());
            leptos::task::spawn_local(async move {
                let was_loaded = loaded.get_untracked().is_some();
                if was_loaded {
                    handle.close().await;
                    loaded.set(None);
                }
                open(true);
            });
        }
    };
    let close = {
        let handle = handle.clone();
        move |_| {
            let handle = handle.clone();
            leptos::task::spawn_local(async move {
                handle.close().await;
                loaded.set(None);
                focus_after_render(load_button);
            });
        }
    };
    let revoke = {
        let (slug, uri, handle, refresh_pin) = (
            slug.clone(),
            uri.clone(),
            handle.clone(),
            refresh_pin.clone(),
        );
        move |_| {
            let (slug, uri, handle, refresh_pin) = (
                slug.clone(),
                uri.clone(),
                handle.clone(),
                refresh_pin.clone(),
            );
            leptos::task::spawn_local(async move {
                handle.close().await;
                loaded.set(None);
                match revoke_pin(slug, uri).await {
                    Ok(_) => {
                        revoked.set(true);
                        notice.set(Some((false, "Revoked: your pinned copy is deleted. The app opens again only when you load it again.".into())));
                    }
                    Err(error) => notice.set(Some((true, error.to_string()))),
                }
                refresh_pin();
                focus_after_render(load_button);
            });
        }
    };
    let toggle_inspect = {
        let handle = handle.clone();
        move |_| {
            traffic.set(handle.traffic());
            inspect.update(|open| *open = !*open);
        }
    };
    let corrupt = move || pin.with(|p| p.as_ref().is_some_and(|p| !p.intact));
    let card_id = format!(
        "card-{}",
        tool.chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect::<String>()
    );
    let (slug_i, uri_i, tool_i) = (slug.clone(), uri.clone(), tool.clone());
    let structured_result = result.clone();
    let frame_handle = handle.clone();
    view! {
        <section class="app-card card" aria-labelledby=format!("{card_id}-title") data-testid="app-card">
            <h3 id=format!("{card_id}-title")>"App " <code>{uri.clone()}</code></h3>
            {move || pin.get().map(|p| {
                let state = if !p.intact {
                    "unavailable: the pinned copy is corrupt".to_string()
                } else {
                    format!("pinned {} ({} bytes)", &p.digest[..12.min(p.digest.len())], p.size)
                };
                view! {
                    <p class="help" data-testid="pin-state">{state}</p>
                    {p.differs.then(|| view! {
                        <p class="notice" role="status">"The server's copy differs from your pinned copy. Refresh pinned resource to use it."</p>
                    })}
                }
            })}
            {move || corrupt().then(|| view! {
                <p class="notice notice-error" role="alert">"This app is unavailable: your pinned copy no longer matches its digest. Open as structure still works."</p>
            })}
            {move || notice.get().map(|(alert, text)| if alert {
                view! { <p class="notice notice-error" role="alert">{text}</p> }.into_any()
            } else {
                view! { <p class="notice" role="status">{text}</p> }.into_any()
            })}
            <div class="actions" role="group" aria-label="App actions">
                <button type="button" class="primary" node_ref=load_button on:click=load
                    disabled=move || busy.get() || loaded.get().is_some() || corrupt()>"Load app"</button>
                <button type="button" on:click=move |_| structure.update(|s| *s = !*s)
                    aria-expanded=move || structure.get().to_string()>"Open as structure"</button>
                <button type="button" on:click=toggle_inspect aria-expanded=move || inspect.get().to_string()>"Inspect"</button>
                <button type="button" on:click=refresh disabled=move || busy.get()>"Refresh pinned resource"</button>
                <button type="button" on:click=close disabled=move || loaded.get().is_none()>"Close"</button>
                <button type="button" on:click=revoke disabled=move || busy.get() || (pin.get().is_none() && loaded.get().is_none())>"Revoke"</button>
            </div>
            {move || structure.get().then(|| view! {
                <div class="structure" data-testid="structure">
                    <ResultView result=structured_result.clone() />
                </div>
            })}
            {move || inspect.get().then(|| {
                let view = loaded.get();
                let p = pin.get();
                let list = |items: Vec<String>| if items.is_empty() { "none".to_string() } else { items.join(", ") };
                let (declared, granted, permissions) = match (&view, &p) {
                    (Some(v), _) => (list(v.declared_domains.clone()), list(v.granted_domains.clone()), list(v.permissions.clone())),
                    (None, Some(p)) => (list(p.declared_domains.clone()), list(p.granted_domains.clone()), list(p.permissions.clone())),
                    _ => ("not pinned yet".into(), "none".into(), "not pinned yet".into()),
                };
                let (bytes_in, bytes_out) = traffic.get();
                view! {
                    <dl class="facts inspect" data-testid="inspect">
                        <dt>"Server"</dt><dd><code>{slug_i.clone()}</code></dd>
                        <dt>"Tool"</dt><dd><code>{tool_i.clone()}</code></dd>
                        <dt>"Resource"</dt><dd><code>{uri_i.clone()}</code></dd>
                        <dt>"Origin"</dt><dd>{format!("opaque (sandboxed, no same-origin), served from /apps/{}/frame/", slug_i)}</dd>
                        <dt>"Network origins declared"</dt><dd>{declared}</dd>
                        <dt>"Network origins granted"</dt><dd>{format!("{granted} (images, fonts, media and styles only; no connections)")}</dd>
                        <dt>"Permissions requested"</dt><dd>{permissions}</dd>
                        <dt>"Permissions granted"</dt><dd>"none"</dd>
                        <dt>"Digest (SHA-256)"</dt><dd><code class="digest" data-testid="inspect-digest">{p.as_ref().map(|p| p.digest.clone()).unwrap_or_else(|| "not pinned".into())}</code></dd>
                        <dt>"Size"</dt><dd data-testid="inspect-size">{p.as_ref().map(|p| format!("{} bytes", p.size)).unwrap_or_else(|| "–".into())}</dd>
                        <dt>"Bridge traffic"</dt><dd>{format!("{bytes_in} bytes received, {bytes_out} bytes sent")}</dd>
                    </dl>
                }
            })}
            {move || loaded.get().map(|view| view! {
                <AppFrame app=view opening=Opening::Given { arguments: arguments.clone(), result: result.clone() } handle=frame_handle.clone() />
            })}
            {move || revoked.get().then(|| view! { <span class="sr-only" role="status">"Revoked."</span> })}
        </section>
    }
}

/// Focuses `button` once the view has caught up (it is enabled again only then).
fn focus_after_render(button: NodeRef<Button>) {
    request_animation_frame(move || {
        if let Some(button) = button.get_untracked() {
            let _ = button.focus();
        }
    });
}
