//! Who the host is and how it looks to the app: the `ui/initialize` answer, the theme and
//! its style variables, the frame's height and the display mode (SPEC §6).

use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos::wasm_bindgen::prelude::Closure;
use serde_json::{Map, Value, json};

use super::super::bridge_message::{self, Id};
use super::super::host_view::DisplayMode;
use super::{PROTOCOL_VERSION, Shared, display_mode, notification, result, send, tell, view};

const MIN_HEIGHT: f64 = 160.0;
const MAX_HEIGHT: f64 = 4000.0;

/// The console's theme variables, as the standard MCP Apps style keys (SPEC §6: only
/// standard keys; the SDK refuses a context carrying any other).
const STYLE_VARIABLES: [(&str, &str); 20] = [
    ("--color-background-primary", "--surface"),
    ("--color-background-secondary", "--bg"),
    ("--color-background-tertiary", "--surface-hover"),
    ("--color-background-info", "--accent-soft"),
    ("--color-background-danger", "--error-bg"),
    ("--color-background-success", "--ok-bg"),
    ("--color-background-warning", "--warn-bg"),
    ("--color-text-primary", "--text"),
    ("--color-text-secondary", "--muted"),
    ("--color-text-info", "--accent-soft-text"),
    ("--color-text-danger", "--error-text"),
    ("--color-text-success", "--ok-text"),
    ("--color-text-warning", "--warn-text"),
    ("--color-border-primary", "--border-strong"),
    ("--color-border-secondary", "--border"),
    ("--color-border-danger", "--error-border"),
    ("--color-ring-primary", "--focus"),
    ("--font-mono", "--mono"),
    ("--border-radius-md", "--radius"),
    ("--shadow-sm", "--shadow"),
];

pub(super) fn initialize_result(session: &Shared) -> Value {
    let locale = web_sys::window()
        .and_then(|w| w.navigator().language())
        .unwrap_or_else(|| "en".into());
    let time_zone =
        js_sys::Intl::DateTimeFormat::new(&js_sys::Array::new(), &js_sys::Object::new())
            .resolved_options();
    let time_zone = js_sys::Reflect::get(&time_zone, &"timeZone".into())
        .ok()
        .and_then(|zone| zone.as_string())
        .unwrap_or_else(|| "UTC".into());
    let mut context = json!({
        "theme": theme(),
        "styles": {"variables": styles()},
        "locale": locale,
        "timeZone": time_zone,
        "displayMode": display_mode(session).as_str(),
        "availableDisplayModes": ["inline", "fullscreen"],
        "containerDimensions": dimensions(session),
        "platform": "web",
    });
    if let Some(agent) = web_sys::window().and_then(|w| w.navigator().user_agent().ok()) {
        context["userAgent"] = json!(agent);
    }
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "hostInfo": {"name": "strad", "version": env!("CARGO_PKG_VERSION")},
        // Exactly what the host does; everything else fails closed.
        "hostCapabilities": {
            "openLinks": {},
            "serverTools": {},
            "serverResources": {},
            "logging": {},
            "downloadFile": {},
            "experimental": {"x-strad/clipboard-write": {}},
        },
        "hostContext": context,
    })
}

fn dimensions(session: &Shared) -> Value {
    let s = session.borrow();
    match display_mode_of(&s.view) {
        DisplayMode::Inline => json!({"width": s.frame.client_width(), "maxHeight": MAX_HEIGHT}),
        DisplayMode::Fullscreen => {
            json!({"width": s.frame.client_width(), "height": s.frame.client_height()})
        }
    }
}

fn display_mode_of(view: &super::super::host_view::HostView) -> DisplayMode {
    view.display_mode.get_untracked()
}

/// `light` or `dark`, as the console shows itself (its setting, else the system's).
fn theme() -> &'static str {
    let document_theme = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
        .and_then(|e| e.get_attribute("data-theme"));
    match document_theme.as_deref() {
        Some("dark") => "dark",
        Some("light") => "light",
        _ => {
            let dark = web_sys::window()
                .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
                .is_some_and(|q| q.matches());
            if dark { "dark" } else { "light" }
        }
    }
}

/// The console's current values of its theme variables, under the standard keys.
fn styles() -> Map<String, Value> {
    let mut variables = Map::new();
    let Some(window) = web_sys::window() else {
        return variables;
    };
    let Some(root) = window.document().and_then(|d| d.document_element()) else {
        return variables;
    };
    let Ok(Some(computed)) = window.get_computed_style(&root) else {
        return variables;
    };
    // Declared values may span lines; the app gets them on one.
    let one_line = |value: String| value.split_whitespace().collect::<Vec<_>>().join(" ");
    for (standard, console) in STYLE_VARIABLES {
        if let Ok(value) = computed.get_property_value(console) {
            let value = one_line(value);
            if !value.is_empty() {
                variables.insert(standard.into(), json!(value));
            }
        }
    }
    // The console's text face is the body's.
    let body = window.document().and_then(|d| d.body());
    if let Some(Ok(Some(style))) = body.map(|b| window.get_computed_style(&b))
        && let Ok(font) = style.get_property_value("font-family")
        && !font.trim().is_empty()
    {
        variables.insert("--font-sans".into(), json!(one_line(font)));
    }
    variables
}

/// When the person switches the console's theme, the app hears it
/// (`ui/notifications/host-context-changed` with the theme and its style variables).
pub(super) fn follow_theme(session: &Shared) {
    let weak = std::rc::Rc::downgrade(session);
    let changed = Closure::<dyn FnMut()>::new(move || {
        if let Some(session) = weak.upgrade() {
            tell(
                &session,
                notification(
                    "ui/notifications/host-context-changed",
                    json!({"theme": theme(), "styles": {"variables": styles()}}),
                ),
            );
        }
    });
    let Some(root) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.document_element())
    else {
        return;
    };
    let Ok(observer) = web_sys::MutationObserver::new(changed.as_ref().unchecked_ref()) else {
        return;
    };
    let options = web_sys::MutationObserverInit::new();
    options.set_attributes(true);
    options.set_attribute_filter(&js_sys::Array::of1(&"data-theme".into()));
    let _ = observer.observe_with_options(&root, &options);
    // Disconnected when the session closes.
    session.borrow_mut().theme_observer = Some(observer);
    changed.forget();
}

pub(super) fn resize(session: &Shared, height: f64) {
    if display_mode(session) == DisplayMode::Fullscreen {
        return;
    }
    let height = bridge_message::clamp_height(height, MIN_HEIGHT, MAX_HEIGHT);
    let frame = session.borrow().frame.clone();
    let _ = web_sys::HtmlElement::style(&frame).set_property("height", &format!("{height}px"));
}

/// `ui/request-display-mode`: `fullscreen` (the frame fills the console's content area) or
/// `inline`, never a mode the app said it does not support; the answer is the mode in effect.
pub(super) fn request_display_mode(session: &Shared, id: &Id, mode: &str) {
    let supported = {
        let s = session.borrow();
        s.display_modes.is_empty() || s.display_modes.iter().any(|m| m == mode)
    };
    match mode {
        "fullscreen" if supported => set_display_mode(session, DisplayMode::Fullscreen),
        "inline" if supported => set_display_mode(session, DisplayMode::Inline),
        _ => {}
    }
    send(
        session,
        result(id, json!({"mode": display_mode(session).as_str()})),
    );
}

/// Changes the mode and tells the app, when it changed.
pub(super) fn set_display_mode(session: &Shared, mode: DisplayMode) {
    if display_mode(session) == mode {
        return;
    }
    view(session).display_mode.set(mode);
    {
        let s = session.borrow();
        let _ = s.frame.set_attribute("data-display-mode", mode.as_str());
        if mode == DisplayMode::Inline {
            let _ = s.frame.focus();
        }
    }
    // The layout settles on the next frame; the app hears the size it gets.
    let session = session.clone();
    request_animation_frame(move || {
        tell(
            &session,
            notification(
                "ui/notifications/host-context-changed",
                json!({"displayMode": mode.as_str(), "containerDimensions": dimensions(&session)}),
            ),
        );
    });
}
