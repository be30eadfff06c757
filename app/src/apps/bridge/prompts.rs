//! What waits for the person's decision (SPEC §8). A click inside a frame is never an
//! approval — no host can see it, and a page's script can call a tool the moment it loads —
//! so each consequential action waits here until the person answers a panel the host draws
//! outside the frame. A tool call approved here is signed by the console for exactly that
//! call (`/apps/<slug>/approvals`) and runs only with that approval.
//!
//! While a page's request waits, the host keeps it alive with `notifications/progress` for
//! its progress token (the official SDK resets its 60 s timeout on each). A request without
//! a token fails at the page's own timeout; the panel then says the app stopped waiting.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use leptos::prelude::*;
use serde_json::{Map, Value, json};

use super::super::host_view::{Ask, Choice, Prompt, shown_arguments};
use super::calls::{self, Answer, PendingCall};
use super::{Shared, error, mark, notification, send, tell, view};

/// How long a new panel's Approve stays disarmed: a press already under way when the page
/// raised the prompt does not approve it.
pub const ARM_MS: f64 = 600.0;
/// How often a waiting request hears progress (well inside the SDK's 60 s).
const PROGRESS_EVERY: Duration = Duration::from_secs(15);
/// How long a request without a progress token is waited for: the SDK's default timeout.
const UNANSWERED_AFTER: Duration = Duration::from_secs(60);

/// How a prompt ended.
pub(super) enum Outcome {
    Approved,
    Declined,
    /// The page stopped waiting before the person decided.
    Expired,
}

type OnOutcome = Box<dyn FnOnce(&Shared, Outcome)>;

/// The prompts of one app session, oldest first (the panel shows the first).
#[derive(Default)]
pub(super) struct Pending {
    next: u64,
    waiting: Vec<(u64, OnOutcome)>,
}

/// Queues `ask`; `on_outcome` runs once, when it is decided or expires.
pub(super) fn ask(
    session: &Shared,
    ask: Ask,
    on_outcome: impl FnOnce(&Shared, Outcome) + 'static,
) -> u64 {
    let id = {
        let mut s = session.borrow_mut();
        s.prompts.next += 1;
        let id = s.prompts.next;
        s.prompts.waiting.push((id, Box::new(on_outcome)));
        id
    };
    let prompt = Prompt {
        id,
        ask,
        armed_at: js_sys::Date::now() + ARM_MS,
        stale: None,
    };
    view(session).prompts.update(|p| p.push(prompt));
    count(session);
    id
}

/// The person's choice. Approve before the panel is armed is ignored; a stale prompt is
/// only dismissed.
pub(super) fn decide(session: &Shared, id: u64, choice: Choice) {
    let prompts = view(session).prompts;
    let Some(prompt) = prompts.get_untracked().into_iter().find(|p| p.id == id) else {
        return;
    };
    if choice == Choice::Approve
        && (prompt.stale.is_some() || js_sys::Date::now() < prompt.armed_at)
    {
        return;
    }
    prompts.update(|p| p.retain(|p| p.id != id));
    let on_outcome = take(session, id);
    count(session);
    if let Some(on_outcome) = on_outcome {
        let outcome = match choice {
            Choice::Approve => Outcome::Approved,
            Choice::Decline => Outcome::Declined,
        };
        on_outcome(session, outcome);
    }
}

/// The page gave up on prompt `id`: it stays on screen, saying so, until dismissed.
fn expire(session: &Shared, id: u64) {
    let Some(on_outcome) = take(session, id) else {
        return;
    };
    view(session).prompts.update(|p| {
        if let Some(prompt) = p.iter_mut().find(|p| p.id == id) {
            prompt.stale = Some(
                "The app stopped waiting for this decision, so nothing was done. \
                 It can ask again."
                    .into(),
            );
        }
    });
    count(session);
    on_outcome(session, Outcome::Expired);
}

fn take(session: &Shared, id: u64) -> Option<OnOutcome> {
    let mut s = session.borrow_mut();
    let at = s.prompts.waiting.iter().position(|(p, _)| *p == id)?;
    Some(s.prompts.waiting.remove(at).1)
}

/// The frame says how many of its calls wait (for people's tools and tests).
fn count(session: &Shared) {
    let waiting = session.borrow().prompts.waiting.len();
    mark(session, "data-pending-approval", &waiting.to_string());
}

/// The session closed: nothing waits any more, and nothing is drawn.
pub(super) fn drop_all(session: &Shared) {
    session.borrow_mut().prompts.waiting.clear();
    view(session).prompts.set(Vec::new());
}

/// A writing call the console asked about (its 428 `details`): drawn as a panel; approved,
/// it is signed for exactly this call and made; declined or expired, the page hears an
/// error and nothing runs. The decision is recorded either way.
pub(super) fn approve_call(session: &Shared, call: PendingCall, details: &Value) {
    let server = details["server"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| session.borrow().app.server_name.clone());
    let shown = match details.get("arguments") {
        Some(arguments) if arguments.is_object() => shown_arguments(arguments),
        _ => shown_arguments(&Value::Object(call.arguments.clone())),
    };
    let ask_for = Ask::ToolCall {
        server,
        tool: call.name.clone(),
        title: details["title"].as_str().map(str::to_owned),
        description: details["description"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
        arguments: shown,
        from_action: call.reply_to.is_none(),
    };
    let keepalive = Keepalive::default();
    let held = keepalive.clone();
    let (reply_to, token) = (call.reply_to.clone(), call.progress_token.clone());
    let prompt = ask(session, ask_for, move |session, outcome| {
        let session = session.clone();
        match outcome {
            Outcome::Approved => wasm_bindgen_futures::spawn_local(async move {
                run_approved(&session, call).await;
                held.stop();
            }),
            Outcome::Declined => {
                held.stop();
                record(&session, &call.name, &call.arguments, "decline");
                finish_refused(&session, &call, "The person declined this call.");
            }
            Outcome::Expired => {
                held.stop();
                record(&session, &call.name, &call.arguments, "expired");
                if let Some(id) = &call.reply_to {
                    send(
                        &session,
                        error(
                            id,
                            -32001,
                            "The call waited too long for the person's approval.",
                        ),
                    );
                }
            }
        }
    });
    if reply_to.is_some() {
        match token {
            Some(token) => keepalive.progress(session, token),
            None => keepalive.expire_after(session, prompt),
        }
    }
}

/// Approve: the console signs the call, then the call is made with that approval.
async fn run_approved(session: &Shared, call: PendingCall) {
    let slug = session.borrow().app.slug.clone();
    let body = json!({"tool": call.name, "arguments": call.arguments, "decision": "approve"});
    let approval = match calls::post(&format!("/apps/{slug}/approvals"), &body).await {
        Ok(minted) => minted["approval"].clone(),
        Err(message) => return finish_refused(session, &call, &message),
    };
    let approval = (!approval.is_null()).then_some(approval);
    match calls::call(&slug, &call.name, &call.arguments, approval).await {
        Answer::Ran(answer) => match (&call.reply_to, &call.label) {
            (Some(id), _) => {
                calls::deliver(session, id, &answer);
                view(session)
                    .outcome
                    .set(Some(format!("Approved: {} ran.", call.name)));
            }
            (None, label) => {
                calls::action_done(session, label.as_deref().unwrap_or(&call.name), &answer)
            }
        },
        Answer::NeedsApproval(_) => finish_refused(session, &call, "The approval was refused."),
        Answer::Refused(message) => finish_refused(session, &call, &message),
    }
}

fn finish_refused(session: &Shared, call: &PendingCall, message: &str) {
    if let Some(id) = &call.reply_to {
        send(session, error(id, -32000, message));
    }
    let what = call.label.as_deref().unwrap_or(&call.name);
    view(session)
        .outcome
        .set(Some(format!("{what}: {message}")));
}

/// Records a decline or an expiry (an approval is recorded when it is signed).
fn record(session: &Shared, tool: &str, arguments: &Map<String, Value>, decision: &str) {
    let slug = session.borrow().app.slug.clone();
    let body = json!({"tool": tool, "arguments": arguments, "decision": decision});
    wasm_bindgen_futures::spawn_local(async move {
        let _ = calls::post(&format!("/apps/{slug}/approvals"), &body).await;
    });
}

/// What keeps a waiting request alive, or gives up on it, until the call is answered.
#[derive(Clone, Default)]
struct Keepalive {
    interval: Rc<RefCell<Option<IntervalHandle>>>,
    timeout: Rc<RefCell<Option<TimeoutHandle>>>,
    stopped: Rc<Cell<bool>>,
}

impl Keepalive {
    /// `notifications/progress` for `token` every `PROGRESS_EVERY`.
    fn progress(&self, session: &Shared, token: Value) {
        let weak = Rc::downgrade(session);
        let (this, step) = (self.clone(), Cell::new(0u64));
        let tick = move || {
            let Some(session) = weak.upgrade().filter(|s| !s.borrow().closed) else {
                return this.stop();
            };
            step.set(step.get() + 1);
            tell(
                &session,
                notification(
                    "notifications/progress",
                    json!({"progressToken": token, "progress": step.get(),
                        "message": "Waiting for the person's approval in the console"}),
                ),
            );
        };
        if let Ok(handle) = set_interval_with_handle(tick, PROGRESS_EVERY) {
            *self.interval.borrow_mut() = Some(handle);
        }
    }

    /// Without a token the page gives up at its own timeout; so does the host.
    fn expire_after(&self, session: &Shared, prompt: u64) {
        let weak = Rc::downgrade(session);
        let stopped = self.stopped.clone();
        let give_up = move || {
            if let Some(session) = weak.upgrade()
                && !stopped.get()
            {
                expire(&session, prompt);
            }
        };
        if let Ok(handle) = set_timeout_with_handle(give_up, UNANSWERED_AFTER) {
            *self.timeout.borrow_mut() = Some(handle);
        }
    }

    fn stop(&self) {
        self.stopped.set(true);
        if let Some(handle) = self.interval.borrow_mut().take() {
            handle.clear();
        }
        if let Some(handle) = self.timeout.borrow_mut().take() {
            handle.clear();
        }
    }
}
