//! One tool's panel: its form (or raw JSON), Call and Cancel, and the result.

use leptos::prelude::*;
use serde_json::Value;

use super::field_error::FieldError;
use super::field_view::FieldView;
use super::id_part;
use super::result_view::ResultView;
use crate::playground::PlayTool;
use crate::playground::schema_form::{self, Problem};

/// Where a call is.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
enum CallState {
    Idle,
    Running,
    Done { arguments: Value, result: Value },
    Failed(String),
    Cancelled,
}

#[component]
pub(super) fn ToolPanel(slug: String, tool: PlayTool, view_only: bool) -> impl IntoView {
    let form = schema_form::form_of(&tool.input_schema);
    let value = RwSignal::new(schema_form::initial_value(&form));
    let raw = RwSignal::new(false);
    let raw_text = RwSignal::new(String::new());
    let problems = RwSignal::new(Vec::<Problem>::new());
    let state = RwSignal::new(CallState::Idle);
    let id = format!("tool-{}", id_part(&tool.name));
    let heading = tool.title.clone().unwrap_or_else(|| tool.name.clone());
    let form_for_validation = form.clone();
    let validate = move || -> Option<Value> {
        let arguments = if raw.get_untracked() {
            match crate::json::parse::<Value>(&raw_text.get_untracked()) {
                Ok(v) if v.is_object() => v,
                _ => {
                    problems.set(vec![Problem {
                        path: "raw".into(),
                        message: "Arguments must be a JSON object.".into(),
                    }]);
                    return None;
                }
            }
        } else {
            value.get_untracked()
        };
        let found = schema_form::validate(&form_for_validation, &arguments);
        let ok = found.is_empty();
        problems.set(found);
        ok.then_some(arguments)
    };
    // Browser-only: a local value made during server rendering would be dropped on another
    // thread.
    #[cfg(feature = "hydrate")]
    let abort = StoredValue::new_local(None::<web_sys::AbortController>);
    let call = {
        let (slug, name) = (slug.clone(), tool.name.clone());
        move |_| {
            let Some(arguments) = validate() else { return };
            state.set(CallState::Running);
            #[cfg(feature = "hydrate")]
            {
                let controller = web_sys::AbortController::new().ok();
                abort.set_value(controller.clone());
                let (slug, name) = (slug.clone(), name.clone());
                wasm_bindgen_futures::spawn_local(async move {
                    let body = serde_json::json!({"name": name, "arguments": arguments.clone()});
                    let answer = crate::playground::call_tool(&slug, &body, controller).await;
                    // A cancelled call stays cancelled, whatever arrives late.
                    if state.get_untracked() != CallState::Running {
                        return;
                    }
                    state.set(match answer {
                        Ok(result) => CallState::Done { arguments, result },
                        Err(message) => CallState::Failed(message),
                    });
                });
            }
            #[cfg(not(feature = "hydrate"))]
            let _ = (&slug, &name, arguments);
        }
    };
    let cancel = move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(controller) = abort.get_value() {
            controller.abort();
        }
        state.set(CallState::Cancelled);
    };
    let toggle_raw = move |_| {
        if raw.get_untracked() {
            // Back to the form: the JSON becomes the form's value when it is an object.
            match crate::json::parse::<Value>(&raw_text.get_untracked()) {
                Ok(v) if v.is_object() => {
                    value.set(v);
                    raw.set(false);
                    problems.set(vec![]);
                }
                _ => problems.set(vec![Problem {
                    path: "raw".into(),
                    message: "Fix the JSON first: arguments must be a JSON object.".into(),
                }]),
            }
        } else {
            raw_text.set(serde_json::to_string_pretty(&value.get_untracked()).unwrap_or_default());
            raw.set(true);
        }
    };
    let fields = form.clone();
    let app_uri = tool.app_uri.clone();
    let tool_name = tool.name.clone();
    let raw_id = format!("{id}-raw");
    let (title_id, labelled_by) = (format!("{id}-title"), format!("{id}-title"));
    view! {
        <section class="tool card" aria-labelledby=labelled_by data-tool=tool.name.clone()>
            <h2 id=title_id>{heading} " " <code>{tool.name.clone()}</code>
                {tool.read_only.then(|| view! { " " <span class="badge">"read-only"</span> })}
            </h2>
            {tool.description.clone().map(|d| view! { <p class="help">{d}</p> })}
            <form class="tool-form" novalidate on:submit=|ev| ev.prevent_default()>
                {move || if raw.get() {
                    let raw_id = raw_id.clone();
                    view! {
                        <label for=raw_id.clone()>"Arguments (JSON)"</label>
                        <textarea id=raw_id class="raw-json" rows="8" spellcheck="false"
                            prop:value=move || raw_text.get()
                            on:input=move |ev| raw_text.set(event_target_value(&ev))
                            aria-invalid=move || problems.with(|p| p.iter().any(|p| p.path == "raw")).to_string()></textarea>
                        <FieldError problems pointer="raw".to_string() />
                    }.into_any()
                } else {
                    view! { <FieldView field=fields.clone() pointer=String::new() value problems id_prefix=id.clone() /> }.into_any()
                }}
                <div class="actions">
                    <button type="button" class="primary" on:click=call.clone()
                        disabled=move || view_only || state.get() == CallState::Running>"Call"</button>
                    {move || (state.get() == CallState::Running).then(|| view! {
                        <span role="status" class="progress"><progress aria-label="Calling"></progress> " Calling…"</span>
                        <button type="button" on:click=cancel>"Cancel"</button>
                    })}
                    <button type="button" on:click=toggle_raw aria-pressed=move || raw.get().to_string()>
                        {move || if raw.get() { "Edit as form" } else { "Edit as JSON" }}
                    </button>
                </div>
            </form>
            {move || match state.get() {
                CallState::Idle | CallState::Running => None,
                CallState::Cancelled => Some(view! { <p class="notice" role="status">"Cancelled."</p> }.into_any()),
                CallState::Failed(message) => Some(view! { <p class="notice notice-error" role="alert">{message}</p> }.into_any()),
                CallState::Done { arguments, result } => Some(view! {
                    <ResultView result=result.clone() />
                    {app_uri.clone().map(|uri| view! {
                        <crate::pages::app_card::AppCard slug=slug.clone() uri tool=tool_name.clone() arguments result />
                    })}
                }.into_any()),
            }}
        </section>
    }
}
