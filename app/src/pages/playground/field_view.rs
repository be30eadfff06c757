//! One field of a tool's form, drawn from its schema: text, number, choice, checkbox, list,
//! object, or raw JSON.

use leptos::prelude::*;
use serde_json::Value;

use super::field_error::FieldError;
use super::id_part;
use crate::playground::schema_form::{self, Field, Kind, Problem};

fn read_at(value: RwSignal<Value>, pointer: &str) -> Value {
    value.with(|v| v.pointer(pointer).cloned().unwrap_or(Value::Null))
}

#[component]
pub(super) fn FieldView(
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
                        let parsed = if raw.trim().is_empty() { Ok(Value::Null) } else { crate::json::parse::<Value>(&raw) };
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
