//! The bridge (SPEC §6), in the hydrated page: JSON-RPC over `postMessage` with the one
//! frame this page holds. Messages are answered only when they come from that frame's
//! window, with origin `"null"`, during its first document load (the app session this
//! bridge is); every message is validated (`bridge_message`), and a request id is answered
//! once. Nothing is sent to the page before it says `ui/notifications/initialized`.

use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;

use leptos::wasm_bindgen::JsCast;
use leptos::wasm_bindgen::prelude::Closure;
use serde_json::{Value, json};
use web_sys::{HtmlIFrameElement, MessageEvent};

use super::bridge_message::{self, Id, Incoming, Notification, OpenTarget, Request};
use super::host_open;

const MIN_HEIGHT: f64 = 160.0;
const MAX_HEIGHT: f64 = 4000.0;
pub const PROTOCOL_VERSION: &str = "2026-01-26";

struct Session {
    frame: HtmlIFrameElement,
    slug: String,
    uri: String,
    opens_with_call: bool,
    loads: u32,
    initialized: bool,
    used_ids: HashSet<Id>,
    closed: bool,
}

type Shared = Rc<RefCell<Session>>;

/// A fresh app-session id: 128 random bits, hex.
pub fn mint_session_id() -> String {
    let mut bytes = [0u8; 16];
    if let Some(crypto) = web_sys::window().and_then(|w| w.crypto().ok()) {
        let _ = crypto.get_random_values_with_u8_array(&mut bytes);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Binds a bridge to `frame` (already in the document, before its document loads).
pub fn start(
    frame: HtmlIFrameElement,
    slug: String,
    uri: String,
    opens_with_call: bool,
    on_close: impl Fn(&'static str) + 'static,
) {
    let session: Shared = Rc::new(RefCell::new(Session {
        frame: frame.clone(),
        slug,
        uri,
        opens_with_call,
        loads: 0,
        initialized: false,
        used_ids: HashSet::new(),
        closed: false,
    }));
    let on_close = Rc::new(on_close);

    // One document per frame: a second load removes the frame and ends this session.
    let loads = session.clone();
    let close = on_close.clone();
    let on_load = Closure::<dyn FnMut()>::new(move || {
        let mut s = loads.borrow_mut();
        s.loads += 1;
        if s.loads > 1 && !s.closed {
            s.closed = true;
            s.frame.remove();
            close("The app loaded a second document, so it was closed.");
        }
    });
    frame.set_onload(Some(on_load.as_ref().unchecked_ref()));
    on_load.forget();

    let messages = session.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        receive(&messages, event)
    });
    if let Some(window) = web_sys::window() {
        let _ =
            window.add_event_listener_with_callback("message", on_message.as_ref().unchecked_ref());
    }
    on_message.forget();
}

fn receive(session: &Shared, event: MessageEvent) {
    let text = {
        let s = session.borrow();
        if s.closed || s.loads != 1 {
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
        match js_sys::JSON::stringify(&event.data()) {
            Ok(text) => String::from(text),
            Err(_) => return,
        }
    };
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
        Ok(Incoming::Response { .. }) => {}
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
            let start = {
                let mut s = session.borrow_mut();
                let first = !s.initialized;
                s.initialized = true;
                first && s.opens_with_call
            };
            if start {
                opening_call(session.clone());
            }
        }
        Notification::SizeChanged {
            height: Some(height),
            ..
        } => resize(session, height),
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

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn send(session: &Shared, message: Value) {
    let s = session.borrow();
    if s.closed {
        return;
    }
    let (Some(window), Ok(value)) = (
        s.frame.content_window(),
        js_sys::JSON::parse(&message.to_string()),
    ) else {
        return;
    };
    // An opaque origin has no name to target: `*` is the only target that reaches it, and
    // the window itself is what identifies the app.
    let _ = window.post_message(&value, "*");
}

/// POSTs JSON to a console route; the answer's JSON, or the route's error message.
async fn post(path: &str, body: &Value) -> Result<Value, String> {
    use wasm_bindgen_futures::JsFuture;
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_credentials(web_sys::RequestCredentials::SameOrigin);
    let headers = web_sys::Headers::new().map_err(|_| "headers")?;
    let _ = headers.set("content-type", "application/json");
    init.set_headers(&headers);
    init.set_body(&body.to_string().into());
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
