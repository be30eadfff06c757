//! The bridge (SPEC §6), in the hydrated page: JSON-RPC over `postMessage` with the one
//! frame this page holds. Messages are answered only when they come from that frame's
//! window, with origin `"null"`, during its first document load (the app session this
//! bridge is); every message is validated (`bridge_message`), and a request id is answered
//! once. Nothing is sent to the page before it says `ui/notifications/initialized`, and
//! `ui/resource-teardown` is sent (and briefly waited for) before the frame is removed.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::{Rc, Weak};

use leptos::wasm_bindgen::JsCast;
use leptos::wasm_bindgen::prelude::Closure;
use serde_json::{Value, json};
use web_sys::{HtmlIFrameElement, MessageEvent};

use super::bridge_message::{self, Id, Incoming, Notification, OpenTarget, Request};
use super::host_open;
use super::location::{self, HashAction, HashHistory};

const MIN_HEIGHT: f64 = 160.0;
const MAX_HEIGHT: f64 = 4000.0;
/// How long the host waits for the page's answer to `ui/resource-teardown`.
const TEARDOWN_WAIT_MS: i32 = 500;
/// Messages handled per second from one frame; the rest are dropped unread.
pub const MESSAGES_PER_SECOND: u32 = 200;
/// The keys the host forwards as `x-strad/key`.
const FORWARDED_KEYS: [&str; 5] = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Escape"];
pub const PROTOCOL_VERSION: &str = "2026-01-26";

/// What the host page shows about its app, as it happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The frame's document has loaded; the page has not yet said it is initialized.
    Loaded,
    /// The handshake is done.
    Initialized,
    /// The opening call of `tool` started.
    OpeningCall { tool: String },
    /// The opening call's result reached the page.
    OpeningDone,
    /// The opening call failed; the page was told why (`tool-cancelled`).
    OpeningFailed { reason: String },
    /// The frame was removed; `Some` says why when it was not the host's own choice.
    Closed { why: Option<&'static str> },
}

/// What the host sends the page once it is initialized.
#[derive(Clone, Debug, PartialEq)]
pub enum Opening {
    Nothing,
    /// Call the declaring tool (named here for the status line; the server picks it).
    Call(String),
    /// The input and result of a call already made.
    Given {
        arguments: Value,
        result: Value,
    },
}

struct Session {
    frame: HtmlIFrameElement,
    slug: String,
    uri: String,
    opening: Opening,
    /// JSON text bytes received from and sent to the page.
    bytes_in: u64,
    bytes_out: u64,
    loads: u32,
    initialized: bool,
    used_ids: HashSet<Id>,
    closed: bool,
    /// The host's pending `ui/resource-teardown`: its id, and what resolves the wait.
    teardown: Option<(Id, js_sys::Function)>,
    on_event: Rc<dyn Fn(Event)>,
    /// The hash the address bar shows, as last seen or written by the host.
    shown_hash: String,
    hash_history: HashHistory,
    /// The rate limit's window: when it started (ms) and how many messages it let through.
    window_start: f64,
    in_window: u32,
    dropped: u32,
    /// The host page's listeners, removed when the session ends.
    listeners: Vec<(&'static str, Closure<dyn FnMut(web_sys::Event)>)>,
}

type Shared = Rc<RefCell<Session>>;

/// The host's handle on one app session.
#[derive(Clone)]
pub struct Bridge(Shared);

impl Bridge {
    /// Sends `ui/resource-teardown` (only to an initialized page: nothing is sent before),
    /// waits up to half a second for its answer, then removes the frame and ends the session.
    pub async fn teardown(&self, reason: &str) {
        let ready = {
            let s = self.0.borrow();
            if s.closed {
                return;
            }
            s.initialized && s.loads <= 1
        };
        if ready {
            let id = Id::Text(format!("strad-teardown-{}", mint_session_id()));
            let session = self.0.clone();
            let wait_id = id.clone();
            let answered = js_sys::Promise::new(&mut |resolve, _reject| {
                if let Some(window) = web_sys::window() {
                    let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
                        &resolve,
                        TEARDOWN_WAIT_MS,
                    );
                }
                session.borrow_mut().teardown = Some((wait_id.clone(), resolve));
            });
            send(
                &self.0,
                request(&id, "ui/resource-teardown", json!({"reason": reason})),
            );
            let _ = wasm_bindgen_futures::JsFuture::from(answered).await;
        }
        close(&self.0, None);
    }

    /// For when nothing can wait (the page itself is going away): the request is sent and
    /// the session ends at once.
    pub fn teardown_now(&self, reason: &str) {
        let ready = {
            let s = self.0.borrow();
            !s.closed && s.initialized && s.loads <= 1
        };
        if ready {
            let id = Id::Text(format!("strad-teardown-{}", mint_session_id()));
            send(
                &self.0,
                request(&id, "ui/resource-teardown", json!({"reason": reason})),
            );
        }
        close(&self.0, None);
    }

    pub fn is_open(&self) -> bool {
        !self.0.borrow().closed
    }

    /// Bytes (as JSON text) the page sent the host, and the host sent the page.
    pub fn traffic(&self) -> (u64, u64) {
        let s = self.0.borrow();
        (s.bytes_in, s.bytes_out)
    }
}

/// Removes the frame and ends the session (once).
fn close(session: &Shared, why: Option<&'static str>) {
    let on_event = {
        let mut s = session.borrow_mut();
        if s.closed {
            return;
        }
        s.closed = true;
        s.frame.remove();
        if let Some(window) = web_sys::window() {
            for (kind, listener) in &s.listeners {
                let _ = window
                    .remove_event_listener_with_callback(kind, listener.as_ref().unchecked_ref());
            }
        }
        if let Some((_, resolve)) = s.teardown.take() {
            let _ = resolve.call0(&leptos::wasm_bindgen::JsValue::NULL);
        }
        s.on_event.clone()
    };
    on_event(Event::Closed { why });
}

fn emit(session: &Shared, event: Event) {
    let on_event = session.borrow().on_event.clone();
    on_event(event);
}

/// A fresh app-session id: 128 random bits, hex.
pub fn mint_session_id() -> String {
    let mut bytes = [0u8; 16];
    if let Some(crypto) = web_sys::window().and_then(|w| w.crypto().ok()) {
        let _ = crypto.get_random_values_with_u8_array(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Binds a bridge to `frame` (already in the document, before its document loads).
/// `opening` is what the page is sent once it is initialized; `on_event` hears what happens.
pub fn start(
    frame: HtmlIFrameElement,
    slug: String,
    uri: String,
    opening: Opening,
    on_event: impl Fn(Event) + 'static,
) -> Bridge {
    let shown_hash = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default();
    let session: Shared = Rc::new(RefCell::new(Session {
        frame: frame.clone(),
        slug,
        uri,
        opening,
        bytes_in: 0,
        bytes_out: 0,
        loads: 0,
        initialized: false,
        used_ids: HashSet::new(),
        closed: false,
        teardown: None,
        on_event: Rc::new(on_event),
        shown_hash,
        hash_history: HashHistory::default(),
        window_start: 0.0,
        in_window: 0,
        dropped: 0,
        listeners: Vec::new(),
    }));

    // One document per frame: a second load removes the frame and ends this session.
    let loads = Rc::downgrade(&session);
    let on_load = Closure::<dyn FnMut()>::new(move || {
        let Some(loads) = loads.upgrade() else { return };
        let second = {
            let mut s = loads.borrow_mut();
            s.loads += 1;
            s.loads > 1
        };
        if second {
            close(
                &loads,
                Some("The app loaded a second document, so it was closed."),
            );
        } else {
            // Keys go to the app from the start.
            let s = loads.borrow();
            let _ = s.frame.focus();
            if let Some(window) = s.frame.content_window() {
                let _ = window.focus();
            }
            drop(s);
            emit(&loads, Event::Loaded);
        }
    });
    frame.set_onload(Some(on_load.as_ref().unchecked_ref()));
    on_load.forget();

    listen(&session, "message", |session, event| {
        if let Ok(event) = event.dyn_into::<MessageEvent>() {
            receive(session, event);
        }
    });
    listen(&session, "keydown", |session, event| {
        if let Ok(event) = event.dyn_into::<web_sys::KeyboardEvent>() {
            forward_key(session, &event);
        }
    });
    listen(&session, "popstate", |session, _| traversed(session));
    Bridge(session)
}

/// Adds a window listener that lives as long as the session (removed on close).
fn listen(session: &Shared, kind: &'static str, handle: fn(&Shared, web_sys::Event)) {
    let weak: Weak<RefCell<Session>> = Rc::downgrade(session);
    let listener = Closure::<dyn FnMut(web_sys::Event)>::new(move |event: web_sys::Event| {
        if let Some(session) = weak.upgrade() {
            handle(&session, event);
        }
    });
    if let Some(window) = web_sys::window() {
        let _ = window.add_event_listener_with_callback(kind, listener.as_ref().unchecked_ref());
    }
    session.borrow_mut().listeners.push((kind, listener));
}

/// ← → ↑ ↓ and Esc pressed on the host page outside a text field go to the app.
fn forward_key(session: &Shared, event: &web_sys::KeyboardEvent) {
    let key = event.key();
    if !FORWARDED_KEYS.contains(&key.as_str())
        || event.ctrl_key()
        || event.alt_key()
        || event.meta_key()
        || in_text_field(event.target())
    {
        return;
    }
    let ready = {
        let s = session.borrow();
        s.initialized && !s.closed
    };
    if ready {
        send(session, notification("x-strad/key", json!({"key": key})));
    }
}

fn in_text_field(target: Option<web_sys::EventTarget>) -> bool {
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
fn traversed(session: &Shared) {
    let Some(now) = web_sys::window().and_then(|w| w.location().hash().ok()) else {
        return;
    };
    let tell = {
        let mut s = session.borrow_mut();
        let from = std::mem::replace(&mut s.shown_hash, now.clone());
        s.hash_history.traversed(&from, &now);
        s.initialized && !s.closed && from != now
    };
    if tell {
        send(session, notification("x-strad/hash", json!({"hash": now})));
    }
}

/// `x-strad/search`: mirrored onto the address bar, keeping the host's `uri`, never a token.
fn mirror_search(search: &str) {
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
fn mirror_hash(session: &Shared, hash: &str, push: bool) {
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
    let _ = session
        .borrow()
        .frame
        .set_attribute("data-hash-action", &format!("{action:?}"));
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

/// The rate limit: true when this message may be read.
fn admit(session: &Shared) -> bool {
    let now = js_sys::Date::now();
    let mut s = session.borrow_mut();
    if now - s.window_start >= 1000.0 {
        s.window_start = now;
        s.in_window = 0;
    }
    if s.in_window >= MESSAGES_PER_SECOND {
        s.dropped = s.dropped.saturating_add(1);
        let dropped = s.dropped.to_string();
        let _ = s.frame.set_attribute("data-dropped-messages", &dropped);
        return false;
    }
    s.in_window += 1;
    true
}

fn receive(session: &Shared, event: MessageEvent) {
    let text = {
        let s = session.borrow();
        // The first document only. Its first messages may arrive before the frame's load
        // event; a second scripted document cannot exist (the frame route serves each app
        // session once, and the host page's CSP lets the frame navigate nowhere else).
        if s.closed || s.loads > 1 {
            return;
        }
        // The frame's own window, and an opaque origin: a second window, a nested frame or
        // a page that gained an origin is not this app.
        let (Some(source), Some(frame_window)) = (event.source(), s.frame.content_window()) else {
            return;
        };
        if !js_sys::Object::is(&source, &frame_window) || event.origin() != "null" {
            return;
        }
        drop(s);
        if !admit(session) {
            return;
        }
        // Anything JSON cannot say (undefined, a cycle, a BigInt) is not a message.
        match js_sys::JSON::stringify(&event.data())
            .ok()
            .and_then(|t| t.as_string())
        {
            Some(text) => text,
            None => return,
        }
    };
    session.borrow_mut().bytes_in += text.len() as u64;
    match bridge_message::parse(&text) {
        Err(rejection) => {
            if let Some(id) = rejection.id {
                send(session, error(&id, rejection.code, rejection.message));
            }
        }
        Ok(Incoming::Request { id, request }) => {
            if !session.borrow_mut().used_ids.insert(id.clone()) {
                send(
                    session,
                    error(&id, -32600, "request id already used in this app session"),
                );
                return;
            }
            answer(session, id, request);
        }
        Ok(Incoming::Notification(notification)) => notice(session, notification),
        Ok(Incoming::Response { id, .. }) => {
            // The answer to the host's teardown (an error answer counts: the page heard it).
            let resolve = {
                let mut s = session.borrow_mut();
                match s.teardown.take() {
                    Some((pending, resolve)) if pending == id => Some(resolve),
                    other => {
                        s.teardown = other;
                        None
                    }
                }
            };
            if let Some(resolve) = resolve {
                let _ = resolve.call0(&leptos::wasm_bindgen::JsValue::NULL);
            }
        }
    }
}

fn answer(session: &Shared, id: Id, request: Request) {
    match request {
        Request::Initialize => send(session, result(&id, initialize_result(session))),
        Request::Ping => send(session, result(&id, json!({}))),
        Request::RequestDisplayMode { .. } => send(session, result(&id, json!({"mode": "inline"}))),
        Request::OpenLink { url } => {
            let opened = bridge_message::is_openable_link(&url)
                && web_sys::window()
                    .and_then(|w| {
                        w.open_with_url_and_target_and_features(
                            &url,
                            "_blank",
                            "noopener,noreferrer",
                        )
                        .ok()
                    })
                    .is_some();
            let reply = if opened {
                result(&id, json!({}))
            } else {
                error(&id, -32000, "only http(s) links open")
            };
            send(session, reply);
        }
        Request::HostOpen(target) => {
            let path = match target {
                OpenTarget::Path(path) => host_open::console_path(&path),
                OpenTarget::Id(id) => host_open::place_for_id(&id),
            };
            match path {
                Some(path) => {
                    send(session, result(&id, json!({})));
                    if let Some(window) = web_sys::window() {
                        let _ = window.location().assign(&path);
                    }
                }
                None => send(session, error(&id, -32602, "not a console place")),
            }
        }
        Request::HostResize { height } => {
            resize(session, height);
            send(session, result(&id, json!({})));
        }
        Request::ToolsCall { name, arguments } => {
            let (slug, session) = (session.borrow().slug.clone(), session.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let body = json!({"name": name, "arguments": arguments});
                let reply = match post(&format!("/apps/{slug}/tools/call"), &body).await {
                    Ok(value) => result(&id, value),
                    Err(message) => error(&id, -32000, &message),
                };
                send(&session, reply);
            });
        }
        Request::ResourcesRead { uri } => {
            let (slug, session) = (session.borrow().slug.clone(), session.clone());
            wasm_bindgen_futures::spawn_local(async move {
                let reply = match post(
                    &format!("/apps/{slug}/resources/read"),
                    &json!({"uri": uri}),
                )
                .await
                {
                    Ok(value) => result(&id, value),
                    Err(message) => error(&id, -32000, &message),
                };
                send(&session, reply);
            });
        }

        Request::NotSupported(_) => send(
            session,
            error(&id, -32601, "not supported: this console has no model"),
        ),
        Request::Unknown(_) => send(session, error(&id, -32601, "method not found")),
    }
}

fn notice(session: &Shared, notification: Notification) {
    match notification {
        Notification::Initialized => {
            // Marks for people's tools and tests: the handshake is done.
            let _ = session
                .borrow()
                .frame
                .set_attribute("data-app-session", "initialized");
            let (first, opening) = {
                let mut s = session.borrow_mut();
                let first = !s.initialized;
                s.initialized = true;
                (first, s.opening.clone())
            };
            if first {
                emit(session, Event::Initialized);
                match opening {
                    Opening::Nothing => {}
                    Opening::Call(tool) => {
                        emit(session, Event::OpeningCall { tool });
                        opening_call(session.clone());
                    }
                    Opening::Given { arguments, result } => {
                        send(
                            session,
                            self::notification(
                                "ui/notifications/tool-input",
                                json!({"arguments": arguments}),
                            ),
                        );
                        send(
                            session,
                            self::notification("ui/notifications/tool-result", result),
                        );
                        let _ = session
                            .borrow()
                            .frame
                            .set_attribute("data-opening-call", "result");
                    }
                }
            }
        }
        Notification::SizeChanged {
            height: Some(height),
            ..
        } => resize(session, height),
        Notification::Search { search } => mirror_search(&search),
        Notification::Hash { hash, push } => mirror_hash(session, &hash, push),
        _ => {}
    }
}

/// The host-initiated call of the declaring tool (the server checks it is read-only), then
/// `tool-input` and `tool-result`, or `tool-cancelled` with the reason.
fn opening_call(session: Shared) {
    let (slug, uri) = {
        let s = session.borrow();
        (s.slug.clone(), s.uri.clone())
    };
    wasm_bindgen_futures::spawn_local(async move {
        match post(&format!("/apps/{slug}/opening-call"), &json!({"uri": uri})).await {
            Ok(answer) => {
                send(
                    &session,
                    notification(
                        "ui/notifications/tool-input",
                        json!({"arguments": answer["arguments"].clone()}),
                    ),
                );
                send(
                    &session,
                    notification("ui/notifications/tool-result", answer["result"].clone()),
                );
                let _ = session
                    .borrow()
                    .frame
                    .set_attribute("data-opening-call", "result");
                emit(&session, Event::OpeningDone);
            }
            Err(reason) => {
                send(
                    &session,
                    notification("ui/notifications/tool-cancelled", json!({"reason": reason})),
                );
                let _ = session
                    .borrow()
                    .frame
                    .set_attribute("data-opening-call", "cancelled");
                emit(&session, Event::OpeningFailed { reason });
            }
        }
    });
}

fn resize(session: &Shared, height: f64) {
    let height = bridge_message::clamp_height(height, MIN_HEIGHT, MAX_HEIGHT);
    let _ = session
        .borrow()
        .frame
        .style()
        .set_property("height", &format!("{height}px"));
}

fn initialize_result(session: &Shared) -> Value {
    let width = session.borrow().frame.client_width();
    let window = web_sys::window();
    let locale = window
        .as_ref()
        .and_then(|w| w.navigator().language())
        .unwrap_or_else(|| "en".into());
    let time_zone =
        js_sys::Intl::DateTimeFormat::new(&js_sys::Array::new(), &js_sys::Object::new())
            .resolved_options();
    let time_zone = js_sys::Reflect::get(&time_zone, &"timeZone".into())
        .ok()
        .and_then(|zone| zone.as_string())
        .unwrap_or_else(|| "UTC".into());
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "hostInfo": {"name": "strad", "version": env!("CARGO_PKG_VERSION")},
        "hostCapabilities": {"openLinks": {}, "serverTools": {}, "logging": {}},
        "hostContext": {
            "theme": theme(),
            "locale": locale,
            "timeZone": time_zone,
            "displayMode": "inline",
            "availableDisplayModes": ["inline"],
            "containerDimensions": {"width": width, "maxHeight": MAX_HEIGHT},
            "platform": "web",
        },
    })
}

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

fn result(id: &Id, value: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.to_value(), "result": value})
}

fn error(id: &Id, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id.to_value(), "error": {"code": code, "message": message}})
}

fn request(id: &Id, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.to_value(), "method": method, "params": params})
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn send(session: &Shared, message: Value) {
    let text = message.to_string();
    let mut s = session.borrow_mut();
    if s.closed {
        return;
    }
    s.bytes_out += text.len() as u64;
    let (Some(window), Ok(value)) = (s.frame.content_window(), js_sys::JSON::parse(&text)) else {
        return;
    };
    // An opaque origin has no name to target: `*` is the only target that reaches it, and
    // the window itself is what identifies the app.
    let _ = window.post_message(&value, "*");
}

/// POSTs JSON to a console route; the answer's JSON, or the route's error message.
async fn post(path: &str, body: &Value) -> Result<Value, String> {
    post_json(path, body, None).await
}

/// POSTs JSON to a console route (same-origin credentials); the answer's JSON, or the
/// route's error message. `abort` lets the caller cancel the wait.
pub async fn post_json(
    path: &str,
    body: &Value,
    abort: Option<&web_sys::AbortSignal>,
) -> Result<Value, String> {
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_credentials(web_sys::RequestCredentials::SameOrigin);
    let headers = web_sys::Headers::new().map_err(|_| "headers")?;
    let _ = headers.set("content-type", "application/json");
    init.set_headers(&headers);
    init.set_body(&body.to_string().into());
    if let Some(abort) = abort {
        init.set_signal(Some(abort));
    }
    let response = JsFuture::from(window.fetch_with_str_and_init(path, &init))
        .await
        .map_err(|_| "the console could not be reached".to_string())?;
    let response: web_sys::Response = response.dyn_into().map_err(|_| "no response")?;
    let text = JsFuture::from(response.text().map_err(|_| "no body")?)
        .await
        .map_err(|_| "no body")?
        .as_string()
        .unwrap_or_default();
    let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    if response.ok() {
        Ok(value)
    } else {
        Err(value["error"]
            .as_str()
            .unwrap_or("the call was refused")
            .to_owned())
    }
}
