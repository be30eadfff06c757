//! The console's own extensions (SPEC §6 "Console extensions"): keys forwarded to the app,
//! and the app's location mirrored onto the address bar, with history.

use leptos::prelude::*;
use serde_json::json;

use super::super::host_view::DisplayMode;
use super::super::location::{self, HashAction};
use super::{Shared, context, display_mode, notification, send, tell, view};

/// The keys the host forwards as `x-strad/key`.
const FORWARDED_KEYS: [&str; 5] = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Escape"];

/// ← → ↑ ↓ and Esc pressed on the host page outside a text field go to the app — except
/// while the host asks the person something (the app is inert then) or in the panel that
/// asks, and Esc in full screen, which returns the app inline.
pub(super) fn forward_key(session: &Shared, event: &web_sys::KeyboardEvent) {
    let key = event.key();
    if !FORWARDED_KEYS.contains(&key.as_str())
        || event.ctrl_key()
        || event.alt_key()
        || event.meta_key()
        || in_text_field(event.target())
        || in_host_panel(event.target())
        || !view(session).prompts.get_untracked().is_empty()
    {
        return;
    }
    if key == "Escape" && display_mode(session) == DisplayMode::Fullscreen {
        event.prevent_default();
        context::set_display_mode(session, DisplayMode::Inline);
        return;
    }
    tell(session, notification("x-strad/key", json!({"key": key})));
}

/// A key pressed in the host's own approval panel is the panel's (Esc there declines).
fn in_host_panel(target: Option<web_sys::EventTarget>) -> bool {
    use leptos::wasm_bindgen::JsCast;
    target
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .and_then(|e| e.closest(".approval-panel").ok().flatten())
        .is_some()
}

fn in_text_field(target: Option<web_sys::EventTarget>) -> bool {
    use leptos::wasm_bindgen::JsCast;
    let Some(element) = target.and_then(|t| t.dyn_into::<web_sys::Element>().ok()) else {
        return false;
    };
    let editable = element
        .clone()
        .dyn_into::<web_sys::HtmlElement>()
        .is_ok_and(|e| e.is_content_editable());
    editable
        || matches!(
            element.tag_name().to_ascii_uppercase().as_str(),
            "INPUT" | "TEXTAREA" | "SELECT"
        )
}

/// Back or Forward: the app hears the address bar's hash, and a late report of the one just
/// left will be dropped.
pub(super) fn traversed(session: &Shared) {
    let Some(now) = web_sys::window().and_then(|w| w.location().hash().ok()) else {
        return;
    };
    let tell_app = {
        let mut s = session.borrow_mut();
        let from = std::mem::replace(&mut s.shown_hash, now.clone());
        s.hash_history.traversed(&from, &now);
        s.initialized && !s.closed && from != now
    };
    if tell_app {
        send(session, notification("x-strad/hash", json!({"hash": now})));
    }
}

/// `x-strad/search`: mirrored onto the address bar, keeping the host's `uri`, never a token.
pub(super) fn mirror_search(search: &str) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let (location, Ok(history)) = (window.location(), window.history()) else {
        return;
    };
    let (Ok(path), Ok(current), Ok(hash)) =
        (location.pathname(), location.search(), location.hash())
    else {
        return;
    };
    let search = location::mirrored_search(&current, search);
    if search == current {
        return;
    }
    let state = history
        .state()
        .unwrap_or(leptos::wasm_bindgen::JsValue::NULL);
    let _ = history.replace_state_with_url(&state, "", Some(&format!("{path}{search}{hash}")));
}

/// `x-strad/hash`: replaced onto the address bar, or pushed when the page asks, the person
/// has just interacted, it is not the first report and the hash is new (SPEC §6 "History").
pub(super) fn mirror_hash(session: &Shared, hash: &str, push: bool) {
    let Some(hash) = location::normalize_hash(hash) else {
        return;
    };
    let Some(window) = web_sys::window() else {
        return;
    };
    let (location, Ok(history)) = (window.location(), window.history()) else {
        return;
    };
    let (Ok(href), Ok(shown)) = (location.href(), location.hash()) else {
        return;
    };
    let Ok(url) = web_sys::Url::new(&href) else {
        return;
    };
    url.set_hash(&hash);
    let encoded = url.hash();
    let activated = js_sys::Reflect::get(&window.navigator(), &"userActivation".into())
        .and_then(|ua| js_sys::Reflect::get(&ua, &"isActive".into()))
        .is_ok_and(|active| active.as_bool() == Some(true));
    let action = session
        .borrow_mut()
        .hash_history
        .report(&encoded, &shown, push, activated);
    // For people's tools and tests: what the last report did.
    super::mark(session, "data-hash-action", &format!("{action:?}"));
    let state = history
        .state()
        .unwrap_or(leptos::wasm_bindgen::JsValue::NULL);
    let written = match action {
        HashAction::Ignore => return,
        HashAction::Replace => history.replace_state_with_url(&state, "", Some(&url.href())),
        HashAction::Push => history.push_state_with_url(&state, "", Some(&url.href())),
    };
    if written.is_ok() {
        session.borrow_mut().shown_hash = location.hash().unwrap_or_default();
    }
}
