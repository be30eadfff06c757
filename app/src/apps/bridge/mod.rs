//! The bridge (SPEC §6), in the hydrated page: JSON-RPC over `postMessage` with the one
//! frame this page holds. Messages are answered only when they come from that frame's
//! window, with origin `"null"`, during its first document load (the app session this
//! bridge is); every message is validated (`bridge_message`), and a request id is answered
//! once. Nothing is sent to the page before it says `ui/notifications/initialized`, and
//! `ui/resource-teardown` is sent (and briefly waited for) before the frame is removed.
//!
//! One job a file: `dispatch` reads and answers the page's messages; `calls` relays its
//! tool calls and resource reads, and the host's opening call; `prompts` holds what waits
//! for the person's decision (SPEC §8: a consequential action is approved outside the
//! frame, never by a click inside it); `host_actions` opens links, saves files and copies
//! text once approved; `context` says who the host is and how it looks; `extensions` are
//! the console's own `x-strad/` keys, location and history; `early` replays what the
//! server-rendered page kept before the bridge existed (`frame_start`).

mod calls;
mod context;
mod dispatch;
mod early;
mod extensions;
mod host_actions;
mod prompts;

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::{Rc, Weak};

use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use leptos::wasm_bindgen::prelude::Closure;
use serde_json::{Value, json};
use web_sys::{HtmlIFrameElement, MessageEvent};

use super::bridge_message::Id;
use super::host_view::{Choice, DisplayMode, HostView};
use super::location::HashHistory;

pub use calls::post_json;

/// Messages of each kind (requests, notifications) handled per second from one frame;
/// past it a request is answered with an error at once and a notification is dropped.
pub const MESSAGES_PER_SECOND: u32 = 200;
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

/// Who the app belongs to, as the host page knows it.
pub struct AppIdentity {
    pub slug: String,
    pub server_name: String,
    pub uri: String,
    /// Hosts whose links open without asking (the server's allow-list).
    pub link_hosts: Vec<String>,
}

/// A fixed window counting messages of one kind.
#[derive(Default)]
struct Window {
    start: f64,
    count: u32,
}

impl Window {
    /// Counts one message at `now` (ms); false when the window is already full.
    fn admit(&mut self, now: f64, per_second: u32) -> bool {
        if now - self.start >= 1000.0 {
            self.start = now;
            self.count = 0;
        }
        if self.count >= per_second {
            return false;
        }
        self.count += 1;
        true
    }
}

struct Session {
    frame: HtmlIFrameElement,
    app: AppIdentity,
    view: HostView,
    opening: Opening,
    /// JSON text bytes received from and sent to the page.
    bytes_in: u64,
    bytes_out: u64,
    loads: u32,
    initialized: bool,
    /// The display modes the app said it supports at `ui/initialize` (empty: unsaid).
    display_modes: Vec<String>,
    used_ids: HashSet<Id>,
    closed: bool,
    /// The host's pending `ui/resource-teardown`: its id, and what resolves the wait.
    teardown: Option<(Id, js_sys::Function)>,
    on_event: Rc<dyn Fn(Event)>,
    /// The hash the address bar shows, as last seen or written by the host.
    shown_hash: String,
    hash_history: HashHistory,
    requests: Window,
    notifications: Window,
    /// Log lines forwarded to the console this second.
    logs_forwarded: Window,
    /// Messages dropped for the rate, shown on the frame as `data-dropped-messages`.
    dropped: u32,
    /// Whether the shown count is already due to be written at the next frame.
    dropped_due: bool,
    prompts: prompts::Pending,
    theme_observer: Option<web_sys::MutationObserver>,
    /// The host page's listeners, removed when the session ends.
    listeners: Vec<(&'static str, Listener)>,
}

type Listener = Closure<dyn FnMut(web_sys::Event)>;

type Shared = Rc<RefCell<Session>>;

/// The host's handle on one app session, and whether the page's own script started the
/// frame's load before the bridge existed (`early`).
#[derive(Clone)]
pub struct Bridge(Shared, bool);

/// How long the host waits for the page's answer to `ui/resource-teardown`.
const TEARDOWN_WAIT_MS: i32 = 500;

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

    /// Whether the frame's document was already requested by the server-rendered page's
    /// script (its load events and messages so far were replayed); if not, the caller sets
    /// the frame's `src`.
    pub fn started_early(&self) -> bool {
        self.1
    }

    pub fn is_open(&self) -> bool {
        !self.0.borrow().closed
    }

    /// Bytes (as JSON text) the page sent the host, and the host sent the page.
    pub fn traffic(&self) -> (u64, u64) {
        let s = self.0.borrow();
        (s.bytes_in, s.bytes_out)
    }

    /// The person's choice on prompt `id`, from a control the host drew. Called within the
    /// click or key press itself, so what needs the person's activation (opening a window,
    /// writing the clipboard) still has it.
    pub fn decide(&self, id: u64, choice: Choice) {
        prompts::decide(&self.0, id, choice);
    }

    /// The person pressed the island action at `index` of the drawn list.
    pub fn press(&self, index: usize) {
        calls::press_action(&self.0, index);
    }

    /// The host's own control (Exit full screen) or Esc.
    pub fn set_display_mode(&self, mode: DisplayMode) {
        context::set_display_mode(&self.0, mode);
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
        if let Some(observer) = s.theme_observer.take() {
            observer.disconnect();
        }
        if let Some((_, resolve)) = s.teardown.take() {
            let _ = resolve.call0(&leptos::wasm_bindgen::JsValue::NULL);
        }
        s.on_event.clone()
    };
    prompts::drop_all(session);
    on_event(Event::Closed { why });
}

fn emit(session: &Shared, event: Event) {
    let on_event = session.borrow().on_event.clone();
    on_event(event);
}

/// Sets a `data-` attribute on the frame, for people's tools and tests.
fn mark(session: &Shared, name: &str, value: &str) {
    let _ = session.borrow().frame.set_attribute(name, value);
}

/// A fresh app-session id: 128 random bits, hex.
pub fn mint_session_id() -> String {
    let mut bytes = [0u8; 16];
    if let Some(crypto) = web_sys::window().and_then(|w| w.crypto().ok()) {
        let _ = crypto.get_random_values_with_u8_array(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Binds a bridge to `frame` (already in the document: before its document loads, or after
/// the page's script started it and kept what arrived, which is replayed first, in order).
/// `opening` is what the page is sent once it is initialized; `view` is what the host draws
/// around the frame; `on_event` hears what happens.
pub fn start(
    frame: HtmlIFrameElement,
    app: AppIdentity,
    view: HostView,
    opening: Opening,
    on_event: impl Fn(Event) + 'static,
) -> Bridge {
    let shown_hash = web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default();
    let session: Shared = Rc::new(RefCell::new(Session {
        frame: frame.clone(),
        app,
        view,
        opening,
        bytes_in: 0,
        bytes_out: 0,
        loads: 0,
        initialized: false,
        display_modes: Vec::new(),
        used_ids: HashSet::new(),
        closed: false,
        teardown: None,
        on_event: Rc::new(on_event),
        shown_hash,
        hash_history: HashHistory::default(),
        requests: Window::default(),
        notifications: Window::default(),
        logs_forwarded: Window::default(),
        dropped: 0,
        dropped_due: false,
        prompts: prompts::Pending::default(),
        theme_observer: None,
        listeners: Vec::new(),
    }));

    let weak = Rc::downgrade(&session);
    let on_load = Closure::<dyn FnMut()>::new(move || {
        if let Some(session) = weak.upgrade() {
            loaded(&session);
        }
    });
    frame.set_onload(Some(on_load.as_ref().unchecked_ref()));
    on_load.forget();

    listen(&session, "message", |session, event| {
        if let Ok(event) = event.dyn_into::<MessageEvent>() {
            dispatch::receive(session, event);
        }
    });
    listen(&session, "keydown", |session, event| {
        if let Ok(event) = event.dyn_into::<web_sys::KeyboardEvent>() {
            extensions::forward_key(session, &event);
        }
    });
    listen(&session, "popstate", |session, _| {
        extensions::traversed(session)
    });
    context::follow_theme(&session);
    let started_early = early::replay(&session);
    Bridge(session, started_early)
}

/// The frame's document finished loading. One document per frame: a second load removes
/// the frame and ends its app session.
fn loaded(session: &Shared) {
    let second = {
        let mut s = session.borrow_mut();
        s.loads += 1;
        s.loads > 1
    };
    if second {
        close(
            session,
            Some("The app loaded a second document, so it was closed."),
        );
        return;
    }
    // Keys go to the app from the start.
    {
        let s = session.borrow();
        let _ = s.frame.focus();
        if let Some(window) = s.frame.content_window() {
            let _ = window.focus();
        }
    }
    emit(session, Event::Loaded);
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

/// Sends to an initialized page only (SPEC §6 lifecycle).
fn tell(session: &Shared, message: Value) {
    let ready = {
        let s = session.borrow();
        s.initialized && !s.closed
    };
    if ready {
        send(session, message);
    }
}

/// The host view's signals, read without holding the session.
fn view(session: &Shared) -> HostView {
    session.borrow().view
}

/// Untracked: the bridge is not a reactive context.
fn display_mode(session: &Shared) -> DisplayMode {
    view(session).display_mode.get_untracked()
}
