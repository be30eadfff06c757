use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use crate::auth::Role;
use crate::entitlements::{MarkReadOnly, PolicyTool, PolicyView, SetPolicy, get_policy};
use crate::json;
use crate::pages::ErrorPage;
use crate::shell::{ActionError, Protected};

/// Admins: a server's tool policy and read-only marks.
#[component]
pub fn AdminPolicyPage() -> impl IntoView {
    view! {
        <Title text="Tool policy" />
        <Protected role=Role::Admin children=|_| view! { <Policy /> } />
    }
}

#[component]
fn Policy() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let set = ServerAction::<SetPolicy>::new();
    let mark = ServerAction::<MarkReadOnly>::new();
    let policy = json::load(
        move || (slug(), set.version().get(), mark.version().get()),
        |(slug, _, _)| get_policy(slug),
    );
    view! {
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match policy.await {
                    Ok(policy) => view! { <PolicyDetails policy set mark /> }.into_any(),
                    Err(error) => view! { <ErrorPage error /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn PolicyDetails(
    policy: PolicyView,
    set: ServerAction<SetPolicy>,
    mark: ServerAction<MarkReadOnly>,
) -> impl IntoView {
    let slug = policy.slug.clone();
    view! {
        <h1>"Tool policy " <code>{slug.clone()}</code></h1>
        <p><a href=format!("/admin/servers/{slug}")>"Back to the server"</a></p>
        <PolicyForm policy=policy.clone() set />
        <section aria-labelledby="tools-title">
            <h2 id="tools-title">"Tools and read-only marks"</h2>
            <p class="help">
                "A tool is read-only when the server says so (readOnlyHint) or when an admin marks it; \
                 a mark is cleared automatically when the server changes the tool's definition, \
                 until an admin marks it again."
            </p>
            <ActionError action=mark />
            {if policy.tools.is_empty() {
                view! { <p>"The server lists no tools."</p> }.into_any()
            } else {
                view! { <ToolsTable slug tools=policy.tools mark /> }.into_any()
            }}
        </section>
    }
}

#[component]
fn PolicyForm(policy: PolicyView, set: ServerAction<SetPolicy>) -> impl IntoView {
    let saved = move || matches!(set.value().get(), Some(Ok(())));
    let ask = policy.writing_from_apps == "ask";
    view! {
        <section aria-labelledby="policy-title" class="form-card">
            <h2 id="policy-title">"Which tools may be called"</h2>
            <ActionForm action=set>
                <input type="hidden" name="slug" value=policy.slug.clone() />
                <ToolListField
                    legend="From the playground"
                    all_name="playground_all"
                    all_label="Every tool from the playground"
                    list_name="playground_tools"
                    list=policy.playground_tools.clone()
                />
                <ToolListField
                    legend="From apps"
                    all_name="apps_all"
                    all_label="Every tool from apps"
                    list_name="app_tools"
                    list=policy.app_tools.clone()
                />
                <fieldset>
                    <legend>"When an app asks for a writing tool"</legend>
                    <label class="check">
                        <input type="radio" name="writing_from_apps" value="deny" checked=!ask prop:checked=!ask />
                        "Refuse (403)"
                    </label>
                    <label class="check">
                        <input type="radio" name="writing_from_apps" value="ask" checked=ask prop:checked=ask />
                        "Ask the person in the host"
                    </label>
                </fieldset>
                <button type="submit" class="primary">"Save policy"</button>
            </ActionForm>
            {move || saved().then(|| view! { <p class="notice" role="status">"Policy saved."</p> })}
            <ActionError action=set />
        </section>
    }
}

/// One list of allowed tools: a checkbox for "every tool", else the names typed below.
#[component]
fn ToolListField(
    legend: &'static str,
    all_name: &'static str,
    all_label: &'static str,
    list_name: &'static str,
    list: Option<Vec<String>>,
) -> impl IntoView {
    let help_id = format!("{list_name}-help");
    // The attribute and child text are for the server render; the properties keep an
    // edited form in step when the saved policy comes back and the view is rebuilt.
    let all = list.is_none();
    let text = list.unwrap_or_default().join("\n");
    let value = text.clone();
    view! {
        <fieldset class="stack">
            <legend>{legend}</legend>
            <label class="check">
                <input type="checkbox" name=all_name checked=all prop:checked=all />
                {all_label}
            </label>
            <label>"Only these tools"
                <textarea name=list_name rows="3" aria-describedby=help_id.clone() prop:value=value>
                    {text}
                </textarea>
            </label>
            <p id=help_id class="help">
                "Tool names separated by commas, spaces or new lines; used when the box above is unchecked."
            </p>
        </fieldset>
    }
}

#[component]
fn ToolsTable(
    slug: String,
    tools: Vec<PolicyTool>,
    mark: ServerAction<MarkReadOnly>,
) -> impl IntoView {
    view! {
        <table>
            <caption>"Tools the server lists"</caption>
            <thead><tr>
                <th scope="col">"Name"</th>
                <th scope="col">"Visibility"</th>
                <th scope="col">"Server's readOnlyHint"</th>
                <th scope="col">"Admin mark"</th>
                <th scope="col">"Action"</th>
            </tr></thead>
            <tbody>
                {tools.into_iter().map(|t| {
                    let (value, text, label) = if t.marked_read_only {
                        ("false", "Remove mark", format!("Remove mark from {}", t.name))
                    } else {
                        ("true", "Mark read-only", format!("Mark read-only: {}", t.name))
                    };
                    let (slug, tool) = (slug.clone(), t.name.clone());
                    view! {
                        <tr data-tool=t.name.clone()>
                            <td><code>{t.name.clone()}</code></td>
                            <td>{if t.visibility.is_empty() { "none".to_string() } else { t.visibility.join(", ") }}</td>
                            <td>{if t.read_only_hint { "yes" } else { "no" }}</td>
                            <td>{if t.marked_read_only {
                                view! { <span class="status status-ok">"read-only"</span> }.into_any()
                            } else {
                                view! { "—" }.into_any()
                            }}</td>
                            <td>
                                <ActionForm action=mark>
                                    <input type="hidden" name="slug" value=slug.clone() />
                                    <input type="hidden" name="tool" value=tool.clone() />
                                    <input type="hidden" name="read_only" value=value />
                                    <button type="submit" aria-label=label>{text}</button>
                                </ActionForm>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}
