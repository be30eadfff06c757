//! Reads each message the frame posts and answers it (SPEC §6 "Bridge").

use leptos::prelude::*;
use serde_json::json;
use web_sys::MessageEvent;

use super::super::bridge_message::{self, Id, Incoming, Notification, OpenTarget, Request};
use super::super::host_open;
use super::super::host_view::LOG_LINES_MAX;
use super::super::host_view::LogLine;
use super::{
    MESSAGES_PER_SECOND, Opening, Shared, calls, context, emit, error, extensions, host_actions,
    mark, notification, result, send, view,
};

/// Log lines a page may have forwarded to the console's log each second.
const LOGS_FORWARDED_PER_SECOND: u32 = 10;

pub(super) fn receive(session: &Shared, event: MessageEvent) {
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
        // A notification past the rate is dropped before it is read at all, so a flood of
        // them costs little and a request behind it is reached soon.
        if is_notification(&event.data()) && !admit_notification(session) {
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
    let parsed = bridge_message::parse(&text);
    if !admit_request(session, &parsed) {
        return;
    }
    match parsed {
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
        Ok(Incoming::Response { id, .. }) => teardown_answered(session, &id),
    }
}

/// Whether posted data is not a request or an answer (it carries no `id`), read without
/// serializing it: it counts against the notifications' budget. Only a hint for the rate
/// limit; the message is validated in full later.
fn is_notification(data: &leptos::wasm_bindgen::JsValue) -> bool {
    !data.is_object() || !js_sys::Reflect::has(data, &"id".into()).unwrap_or(true)
}

/// The rate limit, per kind: past `MESSAGES_PER_SECOND` in a second a notification is
/// dropped, and a request is answered at once with an error (a page built on the SDK would
/// otherwise wait its full timeout for an answer that never comes). Requests and
/// notifications count apart, so a flood of one does not starve the other; answers to the
/// host's own requests are never limited.
fn admit_notification(session: &Shared) -> bool {
    let now = js_sys::Date::now();
    let admitted = session
        .borrow_mut()
        .notifications
        .admit(now, MESSAGES_PER_SECOND);
    if !admitted {
        count_dropped(session);
    }
    admitted
}

fn admit_request(session: &Shared, parsed: &Result<Incoming, bridge_message::Rejection>) -> bool {
    let id = match parsed {
        Ok(Incoming::Request { id, .. }) => id.clone(),
        Err(rejection) if rejection.id.is_some() => rejection.id.clone().unwrap_or(Id::Number(0)),
        // Notifications were counted before they were read; answers are never limited.
        _ => return true,
    };
    let now = js_sys::Date::now();
    if session
        .borrow_mut()
        .requests
        .admit(now, MESSAGES_PER_SECOND)
    {
        return true;
    }
    count_dropped(session);
    send(
        session,
        error(&id, -32000, "too many messages from this app; slow down"),
    );
    false
}

/// Counts a dropped message. The frame shows the count (`data-dropped-messages`), written
/// once a frame rather than once a message, so that a flood does not make the host write
/// to its document for every message it drops.
fn count_dropped(session: &Shared) {
    let mut s = session.borrow_mut();
    s.dropped = s.dropped.saturating_add(1);
    if std::mem::replace(&mut s.dropped_due, true) {
        return;
    }
    let session = session.clone();
    request_animation_frame(move || {
        let mut s = session.borrow_mut();
        s.dropped_due = false;
        let dropped = s.dropped.to_string();
        let _ = s.frame.set_attribute("data-dropped-messages", &dropped);
    });
}

/// The answer to the host's `ui/resource-teardown` (an error answer counts: the page heard).
fn teardown_answered(session: &Shared, id: &Id) {
    let resolve = {
        let mut s = session.borrow_mut();
        match s.teardown.take() {
            Some((pending, resolve)) if pending == *id => Some(resolve),
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

fn answer(session: &Shared, id: Id, request: Request) {
    match request {
        Request::Initialize { display_modes } => {
            session.borrow_mut().display_modes = display_modes;
            send(session, result(&id, context::initialize_result(session)));
        }
        Request::Ping => send(session, result(&id, json!({}))),
        Request::RequestDisplayMode { mode } => context::request_display_mode(session, &id, &mode),
        Request::OpenLink { url } => host_actions::open_link(session, id, url),
        Request::DownloadFile(items) => host_actions::download(session, id, items),
        Request::ClipboardWrite { text } => host_actions::clipboard(session, id, text),
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
            context::resize(session, height);
            send(session, result(&id, json!({})));
        }
        Request::ToolsCall {
            name,
            arguments,
            progress_token,
        } => calls::tools_call(session, id, name, arguments, progress_token),
        Request::ResourcesRead { uri } => calls::resources_read(session, id, uri),
        Request::NotSupported(_) => send(
            session,
            error(&id, -32601, "not supported: this console has no model"),
        ),
        Request::Unknown(_) => send(session, error(&id, -32601, "method not found")),
    }
}

fn notice(session: &Shared, notification: Notification) {
    match notification {
        Notification::Initialized => initialized(session),
        Notification::SizeChanged {
            height: Some(height),
            ..
        } => context::resize(session, height),
        Notification::Log {
            level,
            logger,
            data,
        } => log(session, level, logger, data),
        Notification::Search { search } => extensions::mirror_search(&search),
        Notification::Hash { hash, push } => extensions::mirror_hash(session, &hash, push),
        _ => {}
    }
}

fn initialized(session: &Shared) {
    mark(session, "data-app-session", "initialized");
    let (first, opening) = {
        let mut s = session.borrow_mut();
        let first = !s.initialized;
        s.initialized = true;
        (first, s.opening.clone())
    };
    if !first {
        return;
    }
    emit(session, super::Event::Initialized);
    match opening {
        Opening::Nothing => {}
        Opening::Call(tool) => {
            emit(session, super::Event::OpeningCall { tool });
            calls::opening_call(session.clone());
        }
        Opening::Given { arguments, result } => {
            send(
                session,
                notification(
                    "ui/notifications/tool-input",
                    json!({"arguments": arguments}),
                ),
            );
            send(
                session,
                notification("ui/notifications/tool-result", result),
            );
            mark(session, "data-opening-call", "result");
        }
    }
}

/// `notifications/message`: kept for Inspect (the last `LOG_LINES_MAX`), and forwarded to
/// the console's log, which records the slug and the person, at most
/// `LOGS_FORWARDED_PER_SECOND` a second.
fn log(session: &Shared, level: String, logger: Option<String>, data: String) {
    let at = js_sys::Date::new_0()
        .to_iso_string()
        .as_string()
        .unwrap_or_default();
    let line = LogLine {
        at,
        level: level.clone(),
        logger: logger.clone(),
        data: data.clone(),
    };
    view(session).log.update(|log| {
        if log.len() >= LOG_LINES_MAX {
            log.remove(0);
        }
        log.push(line);
    });
    let (forward, slug) = {
        let mut s = session.borrow_mut();
        let now = js_sys::Date::now();
        (
            s.logs_forwarded.admit(now, LOGS_FORWARDED_PER_SECOND),
            s.app.slug.clone(),
        )
    };
    if forward {
        wasm_bindgen_futures::spawn_local(async move {
            let body = json!({"level": level, "logger": logger, "data": data});
            let _ = calls::post(&format!("/apps/{slug}/log"), &body).await;
        });
    }
}
