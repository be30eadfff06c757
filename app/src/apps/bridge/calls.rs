//! The app's tool calls and resource reads, relayed to the console's routes, and the host's
//! own calls: the opening call and the island actions the person presses (SPEC §6, §8).
//! A writing call the policy asks about comes back 428 with what to show; it then waits in
//! `prompts` for the person.

use leptos::prelude::*;
use leptos::wasm_bindgen::JsCast;
use serde_json::{Map, Value, json};

use super::super::bridge_message::Id;
use super::super::host_view::ActionView;
use super::{Event, Shared, emit, error, mark, notification, prompts, result, send, view};

/// What a console call route answered.
pub(super) enum Answer {
    /// 200: `{"result", "actions"}`.
    Ran(Value),
    /// 428: the call waits for the person's approval; what the panel shows.
    NeedsApproval(Value),
    /// Anything else, as the route said it.
    Refused(String),
}

/// A tool call waiting on the person, with who to answer.
pub(super) struct PendingCall {
    /// The page's request to answer; `None` for an island action the person pressed.
    pub reply_to: Option<Id>,
    /// The island action's label.
    pub label: Option<String>,
    pub name: String,
    pub arguments: Map<String, Value>,
    pub progress_token: Option<Value>,
}

fn slug(session: &Shared) -> String {
    session.borrow().app.slug.clone()
}

/// One call through `/apps/<slug>/tools/call`, with an approval when the person gave one.
pub(super) async fn call(
    slug: &str,
    name: &str,
    arguments: &Map<String, Value>,
    approval: Option<Value>,
) -> Answer {
    let mut body = json!({"name": name, "arguments": arguments});
    if let Some(approval) = approval {
        body["approval"] = approval;
    }
    match post_status(&format!("/apps/{slug}/tools/call"), &body, None).await {
        Ok((status, answer)) if (200..300).contains(&status) => Answer::Ran(answer),
        Ok((428, answer)) => Answer::NeedsApproval(answer["approval"].clone()),
        Ok((_, answer)) => Answer::Refused(
            answer["error"]
                .as_str()
                .unwrap_or("the call was refused")
                .to_owned(),
        ),
        Err(message) => Answer::Refused(message),
    }
}

/// The page's `tools/call`.
pub(super) fn tools_call(
    session: &Shared,
    id: Id,
    name: String,
    arguments: Map<String, Value>,
    progress_token: Option<Value>,
) {
    let session = session.clone();
    wasm_bindgen_futures::spawn_local(async move {
        match call(&slug(&session), &name, &arguments, None).await {
            Answer::Ran(answer) => deliver(&session, &id, &answer),
            Answer::NeedsApproval(details) => {
                let pending = PendingCall {
                    reply_to: Some(id),
                    label: None,
                    name,
                    arguments,
                    progress_token,
                };
                prompts::approve_call(&session, pending, &details);
            }
            Answer::Refused(message) => send(&session, error(&id, -32000, &message)),
        }
    });
}

/// Answers the page with a call's result, and draws the actions its server proposed.
pub(super) fn deliver(session: &Shared, id: &Id, answer: &Value) {
    show_actions(session, answer);
    send(session, result(id, answer["result"].clone()));
}

/// The island actions of the latest result: only what the console's route vetted from the
/// server's answer (the page cannot propose any; nothing it posts is read here).
fn show_actions(session: &Shared, answer: &Value) {
    let Some(actions) = answer.get("actions") else {
        return;
    };
    // Read as text by the console's one JSON reader: `serde_json::from_value` is a second
    // reader (from a `Value`), which the app page would carry for this alone.
    let actions: Vec<ActionView> = crate::json::parse(&actions.to_string()).unwrap_or_default();
    view(session).actions.set(actions);
}

/// The person pressed a drawn island action: the approval panel first, bound to exactly
/// this call (whether or not the tool writes), then the call with the console's approval.
pub(super) fn press_action(session: &Shared, index: usize) {
    let Some(action) = view(session)
        .actions
        .get_untracked()
        .into_iter()
        .filter(|a| a.drawn)
        .nth(index)
    else {
        return;
    };
    let pending = PendingCall {
        reply_to: None,
        label: Some(action.label.clone()),
        name: action.tool.clone(),
        arguments: action.arguments.as_object().cloned().unwrap_or_default(),
        progress_token: None,
    };
    let details = json!({
        "title": action.title,
        "description": action.description.unwrap_or_default(),
        "arguments": action.arguments,
    });
    prompts::approve_call(session, pending, &details);
}

/// Says what an island action's call did.
pub(super) fn action_done(session: &Shared, label: &str, answer: &Value) {
    let failed = answer["result"]["isError"].as_bool() == Some(true);
    let said = if failed {
        format!("{label}: the server answered with an error.")
    } else {
        format!("{label}: done.")
    };
    view(session).outcome.set(Some(said));
    // An action's result replaces the island only when it proposes actions of its own.
    if answer["actions"].as_array().is_some_and(|a| !a.is_empty()) {
        show_actions(session, answer);
    }
}

/// The host-initiated call of the declaring tool (the server checks it is read-only), then
/// `tool-input` and `tool-result`, or `tool-cancelled` with the reason.
pub(super) fn opening_call(session: Shared) {
    let (slug, uri) = {
        let s = session.borrow();
        (s.app.slug.clone(), s.app.uri.clone())
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
                show_actions(&session, &answer);
                mark(&session, "data-opening-call", "result");
                emit(&session, Event::OpeningDone);
            }
            Err(reason) => {
                send(
                    &session,
                    notification("ui/notifications/tool-cancelled", json!({"reason": reason})),
                );
                mark(&session, "data-opening-call", "cancelled");
                emit(&session, Event::OpeningFailed { reason });
            }
        }
    });
}

/// The page's `resources/read` (the route allows this server's `ui://` resources only).
pub(super) fn resources_read(session: &Shared, id: Id, uri: String) {
    let session = session.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let path = format!("/apps/{}/resources/read", slug(&session));
        let reply = match post(&path, &json!({"uri": uri})).await {
            Ok(value) => result(&id, value),
            Err(message) => error(&id, -32000, &message),
        };
        send(&session, reply);
    });
}

/// POSTs JSON to a console route; the answer's JSON, or the route's error message.
pub(super) async fn post(path: &str, body: &Value) -> Result<Value, String> {
    post_json(path, body, None).await
}

/// POSTs JSON to a console route (same-origin credentials); the answer's JSON, or the
/// route's error message. `abort` lets the caller cancel the wait.
pub async fn post_json(
    path: &str,
    body: &Value,
    abort: Option<&web_sys::AbortSignal>,
) -> Result<Value, String> {
    let (status, value) = post_status(path, body, abort).await?;
    if (200..300).contains(&status) {
        Ok(value)
    } else {
        Err(value["error"]
            .as_str()
            .unwrap_or("the call was refused")
            .to_owned())
    }
}

/// POSTs JSON to a console route; its status and its JSON (null when it has none).
async fn post_status(
    path: &str,
    body: &Value,
    abort: Option<&web_sys::AbortSignal>,
) -> Result<(u16, Value), String> {
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
    let value: Value = crate::json::parse(&text).unwrap_or(Value::Null);
    Ok((response.status(), value))
}
