//! `/servers/<slug>`: the playground (SPEC §7). Each tool the person may call, with a form
//! built from its input schema (or raw JSON), a Call button with progress and Cancel, the
//! result (text, images, embedded resources, structured content; bounded, collapsible,
//! copyable), and for an app tool an app card.

use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;
use serde_json::Value;

use crate::pages::ErrorPage;
use crate::playground::schema_form::{self, Field, Kind, Problem};
use crate::playground::{PlayTool, playground_tools};
use crate::shell::Protected;

/// The most text shown from one result part; the rest is counted, not shown.
const SHOWN_BYTES: usize = 64 * 1024;

#[component]
pub fn PlaygroundPage() -> impl IntoView {
    view! {
        <Title text="Playground" />
        <Protected children=|_| view! { <PlaygroundBody /> } />
    }
}

#[component]
fn PlaygroundBody() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let tools = Resource::new_blocking(slug, playground_tools);
    view! {
        <Suspense fallback=|| view! { <p class="loading" role="status">"Loading the tools…"</p> }>
            {move || Suspend::new(async move {
                match tools.await {
                    Ok(playground) => {
                        let slug = playground.slug.clone();
                        let view_only = playground.view_only;
                        view! {
                            <h1>{playground.display_name.clone()} " " <code>{slug.clone()}</code></h1>
                            <p class="help">"Call this server's tools by hand. Calls run under your authority and are audited."
                                " " <a href=format!("/apps/{slug}")>"Open its app"</a> " · " <a href="/pins">"Your pinned apps"</a></p>
                            {view_only.then(|| view! {
                                <p class="notice" role="status">"This session was opened with a login token: you can look, but not call tools."</p>
                            })}
                            <noscript><p class="notice">"Calling tools here needs JavaScript."</p></noscript>
                            {if playground.tools.is_empty() {
                                view! { <p>"No tools of this server are offered to you here."</p> }.into_any()
                            } else {
                                view! {
                                    <ul class="tools" role="list">
                                        {playground.tools.into_iter().map(|tool| view! {
                                            <li><ToolPanel slug=slug.clone() tool view_only /></li>
                                        }).collect_view()}
                                    </ul>
                                }.into_any()
                            }}
                        }.into_any()
                    }
                    Err(error) => view! { <ErrorPage error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

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

/// A safe id fragment for `text` (tool names and pointers can hold anything).
fn id_part(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

#[component]
fn ToolPanel(slug: String, tool: PlayTool, view_only: bool) -> impl IntoView {
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
            match serde_json::from_str::<Value>(&raw_text.get_untracked()) {
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
            match serde_json::from_str::<Value>(&raw_text.get_untracked()) {
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

/// The message for the field at `pointer`, if validation found one.
#[component]
fn FieldError(problems: RwSignal<Vec<Problem>>, pointer: String) -> impl IntoView {
    let id = format!("error-{}", id_part(&pointer));
    move || {
        problems.with(|found| {
            found
                .iter()
                .find(|p| p.path == pointer)
                .map(|p| view! { <p class="field-error" id=id.clone() role="alert">{p.message.clone()}</p> })
        })
    }
}

fn read_at(value: RwSignal<Value>, pointer: &str) -> Value {
    value.with(|v| v.pointer(pointer).cloned().unwrap_or(Value::Null))
}

#[component]
fn FieldView(
    field: Field,
    pointer: String,
    value: RwSignal<Value>,
    problems: RwSignal<Vec<Problem>>,
    id_prefix: String,
) -> impl IntoView {
    let id = format!("{id_prefix}-{}", id_part(&pointer));
    let label = if pointer.is_empty() {
        "Arguments".to_string()
    } else {
        let label = field.label();
        if label.is_empty() {
            "Item".to_string()
        } else {
            label
        }
    };
    let required = field.required;
    let described = field.description.clone();
    let invalid = {
        let pointer = pointer.clone();
        move || {
            problems
                .with(|p| p.iter().any(|x| x.path == pointer))
                .to_string()
        }
    };
    let set = {
        let pointer = pointer.clone();
        move |new: Value| value.update(|v| schema_form::set_at(v, &pointer, new))
    };
    let help = described.map(|d| view! { <span class="help">{d}</span> });
    let error = view! { <FieldError problems pointer=pointer.clone() /> };
    let mark = required.then_some(view! { <span class="required" aria-hidden="true">" *"</span> });
    match field.kind.clone() {
        Kind::Text {
            min_length,
            max_length,
            format,
            multiline,
        } => {
            let current = {
                let pointer = pointer.clone();
                move || {
                    read_at(value, &pointer)
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                }
            };
            let input_type = match format.as_deref() {
                Some("email") => "email",
                Some("uri" | "url") => "url",
                Some("date") => "date",
                _ => "text",
            };
            let on_input = move |ev| {
                let text = event_target_value(&ev);
                set(if text.is_empty() {
                    Value::Null
                } else {
                    Value::String(text)
                });
            };
            if multiline {
                view! {
                    <label for=id.clone()>{label}{mark}</label>
                    {help}
                    <textarea id=id.clone() rows="2" required=required
                        minlength=min_length.map(|m| m.to_string()) maxlength=max_length.map(|m| m.to_string())
                        prop:value=current on:input=on_input aria-invalid=invalid></textarea>
                    {error}
                }.into_any()
            } else {
                view! {
                    <label for=id.clone()>{label}{mark}</label>
                    {help}
                    <input id=id.clone() type=input_type required=required
                        minlength=min_length.map(|m| m.to_string()) maxlength=max_length.map(|m| m.to_string())
                        prop:value=current on:input=on_input aria-invalid=invalid />
                    {error}
                }.into_any()
            }
        }
        Kind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let current = {
                let pointer = pointer.clone();
                move || match read_at(value, &pointer) {
                    Value::Null => String::new(),
                    Value::String(s) => s,
                    other => other.to_string(),
                }
            };
            view! {
                <label for=id.clone()>{label}{mark}</label>
                {help}
                <input id=id.clone() type="text" inputmode=if integer { "numeric" } else { "decimal" }
                    required=required
                    data-min=minimum.map(|m| m.to_string()) data-max=maximum.map(|m| m.to_string())
                    prop:value=current
                    on:input=move |ev| set(schema_form::number_from_input(&event_target_value(&ev), integer))
                    aria-invalid=invalid />
                {error}
            }.into_any()
        }
        Kind::Boolean => {
            let checked = {
                let pointer = pointer.clone();
                move || read_at(value, &pointer).as_bool().unwrap_or(false)
            };
            view! {
                <label class="check" for=id.clone()>
                    <input id=id.clone() type="checkbox" prop:checked=checked
                        on:change=move |ev| set(Value::Bool(event_target_checked(&ev))) />
                    {label}{mark}
                </label>
                {help}
                {error}
            }
            .into_any()
        }
        Kind::Choice(choices) => {
            let shown: Vec<String> = choices
                .iter()
                .map(|c| match c {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let selected = {
                let (pointer, choices) = (pointer.clone(), choices.clone());
                move || {
                    let current = read_at(value, &pointer);
                    choices
                        .iter()
                        .position(|c| *c == current)
                        .map(|i| i.to_string())
                        .unwrap_or_default()
                }
            };
            let pick = {
                let choices = choices.clone();
                move |ev| {
                    let index = event_target_value(&ev).parse::<usize>().ok();
                    set(index
                        .and_then(|i| choices.get(i).cloned())
                        .unwrap_or(Value::Null));
                }
            };
            view! {
                <label for=id.clone()>{label}{mark}</label>
                {help}
                <select id=id.clone() required=required prop:value=selected on:change=pick aria-invalid=invalid>
                    <option value="">"—"</option>
                    {shown.into_iter().enumerate().map(|(i, text)| view! {
                        <option value=i.to_string()>{text}</option>
                    }).collect_view()}
                </select>
                {error}
            }.into_any()
        }
        Kind::List { items, .. } => {
            let count = {
                let pointer = pointer.clone();
                move || read_at(value, &pointer).as_array().map_or(0, Vec::len)
            };
            let add = {
                let (items, set) = (items.clone(), set.clone());
                let pointer = pointer.clone();
                move |_| {
                    let mut list = read_at(value, &pointer)
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    let start = schema_form::initial_value(&items);
                    list.push(if start.is_null() {
                        placeholder(&items.kind)
                    } else {
                        start
                    });
                    set(Value::Array(list));
                }
            };
            let rows = {
                let (items, pointer, id_prefix) =
                    (items.clone(), pointer.clone(), id_prefix.clone());
                move || {
                    (0..count())
                        .map(|i| {
                            let item_pointer = format!("{pointer}/{i}");
                            let mut item = (*items).clone();
                            item.required = true;
                            item.name = format!("Item {}", i + 1);
                            let remove = {
                                let pointer = pointer.clone();
                                move |_| {
                                    let mut list = read_at(value, &pointer).as_array().cloned().unwrap_or_default();
                                    if i < list.len() {
                                        list.remove(i);
                                    }
                                    value.update(|v| schema_form::set_at(v, &pointer, Value::Array(list)));
                                }
                            };
                            view! {
                                <li>
                                    <FieldView field=item pointer=item_pointer value problems id_prefix=id_prefix.clone() />
                                    <button type="button" on:click=remove>{format!("Remove item {}", i + 1)}</button>
                                </li>
                            }
                        })
                        .collect_view()
                }
            };
            view! {
                <fieldset class="list">
                    <legend>{label}{mark}</legend>
                    {help}
                    <ol>{rows}</ol>
                    <button type="button" on:click=add>"Add item"</button>
                    {error}
                </fieldset>
            }
            .into_any()
        }
        Kind::Object(children) => {
            let inner = children
                .into_iter()
                .map(|child| {
                    let child_pointer = format!("{pointer}/{}", schema_form::escape_pointer(&child.name));
                    view! { <FieldView field=child pointer=child_pointer value problems id_prefix=id_prefix.clone() /> }
                })
                .collect_view();
            if pointer.is_empty() {
                view! { <div class="fields">{inner}{error}</div> }.into_any()
            } else {
                view! {
                    <fieldset>
                        <legend>{label}{mark}</legend>
                        {help}
                        {inner}
                        {error}
                    </fieldset>
                }
                .into_any()
            }
        }
        Kind::Json => {
            let text = RwSignal::new(match read_at(value, &pointer) {
                Value::Null => String::new(),
                other => serde_json::to_string_pretty(&other).unwrap_or_default(),
            });
            let pointer_for_input = pointer.clone();
            view! {
                <label for=id.clone()>{label}{mark} " (JSON)"</label>
                {help}
                <textarea id=id.clone() rows="3" spellcheck="false" class="raw-json"
                    prop:value=move || text.get()
                    on:input=move |ev| {
                        let raw = event_target_value(&ev);
                        text.set(raw.clone());
                        let parsed = if raw.trim().is_empty() { Ok(Value::Null) } else { serde_json::from_str::<Value>(&raw) };
                        match parsed {
                            Ok(v) => {
                                problems.update(|p| p.retain(|x| x.path != pointer_for_input));
                                value.update(|root| schema_form::set_at(root, &pointer_for_input, v));
                            }
                            Err(_) => problems.update(|p| {
                                p.retain(|x| x.path != pointer_for_input);
                                p.push(Problem { path: pointer_for_input.clone(), message: "Not valid JSON.".into() });
                            }),
                        }
                    }
                    aria-invalid=invalid></textarea>
                {error}
            }.into_any()
        }
    }
}

/// What a new list item starts as when its schema gives no default.
fn placeholder(kind: &Kind) -> Value {
    match kind {
        Kind::Text { .. } => Value::String(String::new()),
        Kind::Boolean => Value::Bool(false),
        Kind::Object(_) => Value::Object(Default::default()),
        Kind::List { .. } => Value::Array(vec![]),
        _ => Value::Null,
    }
}

/// `text`, cut at the display bound, with how much was left out.
fn bounded(text: &str) -> (String, Option<usize>) {
    if text.len() <= SHOWN_BYTES {
        return (text.to_owned(), None);
    }
    let mut cut = SHOWN_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    (text[..cut].to_owned(), Some(text.len() - cut))
}

#[component]
fn Bounded(text: String) -> impl IntoView {
    let (shown, left) = bounded(&text);
    view! {
        <pre class="result-text">{shown}</pre>
        {left.map(|n| view! { <p class="help">{format!("… {n} more bytes not shown.")}</p> })}
    }
}

/// A tool's result: each content part, structured content, and the raw JSON; no script of
/// the server's ever runs here (images are shown as images only).
#[component]
pub fn ResultView(result: Value) -> impl IntoView {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let parts = result
        .get("content")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let structured = result.get("structuredContent").cloned();
    let raw = serde_json::to_string_pretty(&result).unwrap_or_default();
    let copied = RwSignal::new(false);
    let copy = {
        let raw = raw.clone();
        move |_| {
            if let Some(window) = web_sys::window() {
                let _ = window.navigator().clipboard().write_text(&raw);
                copied.set(true);
            }
        }
    };
    view! {
        <section class=if is_error { "result result-error" } else { "result" } aria-label="Result">
            <details open>
                <summary>{if is_error { "Result (the tool reported an error)" } else { "Result" }}</summary>
                {parts.into_iter().map(|part| view! { <ContentPart part /> }).collect_view()}
                {structured.map(|s| view! {
                    <details open>
                        <summary>"Structured content"</summary>
                        <Bounded text=serde_json::to_string_pretty(&s).unwrap_or_default() />
                    </details>
                })}
                <details>
                    <summary>"Raw JSON"</summary>
                    <Bounded text=raw />
                </details>
                <button type="button" on:click=copy>{move || if copied.get() { "Copied" } else { "Copy JSON" }}</button>
            </details>
        </section>
    }
}

#[component]
fn ContentPart(part: Value) -> impl IntoView {
    let text = |key: &str| {
        part.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    match text("type").as_str() {
        "text" => view! { <Bounded text=text("text") /> }.into_any(),
        "image" => {
            let mime = text("mimeType");
            let data = text("data");
            let shown = matches!(mime.as_str(), "image/png" | "image/jpeg" | "image/gif" | "image/webp")
                && data.len() <= 4 * 1024 * 1024
                && data.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='));
            if shown {
                view! { <img class="result-image" alt="Image returned by the tool" src=format!("data:{mime};base64,{data}") /> }.into_any()
            } else {
                view! { <p class="help">{format!("An image ({mime}) that is not shown here.")}</p> }.into_any()
            }
        }
        "resource" => {
            let resource = part.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or_default().to_owned();
            let body = resource.get("text").and_then(Value::as_str).map(str::to_owned);
            view! {
                <div class="result-resource">
                    <p>"Embedded resource " <code>{uri}</code></p>
                    {match body {
                        Some(body) => view! { <Bounded text=body /> }.into_any(),
                        None => view! { <p class="help">"Binary content, not shown."</p> }.into_any(),
                    }}
                </div>
            }.into_any()
        }
        "resource_link" => view! { <p>"Resource " <code>{text("uri")}</code></p> }.into_any(),
        "audio" => view! { <p class="help">{format!("Audio ({}), not played here.", text("mimeType"))}</p> }.into_any(),
        _ => view! { <Bounded text=serde_json::to_string_pretty(&part).unwrap_or_default() /> }.into_any(),
    }
}
