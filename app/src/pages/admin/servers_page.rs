use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::components::A;

use crate::auth::Role;
use crate::json;
use crate::pages::ErrorPage;
use crate::servers::views::{ServerStatus, ServerSummary};
use crate::servers::{Capability, RegisterServer, list_servers};
use crate::shell::{ActionError, Protected};

/// Admins: every server, and the form to register a Streamable HTTP one.
#[component]
pub fn AdminServersPage() -> impl IntoView {
    view! {
        <Title text="Servers" />
        <Protected role=Role::Admin children=|_| view! { <ServersList /> <RegisterForm /> } />
    }
}

#[component]
fn ServersList() -> impl IntoView {
    let servers = json::load(|| (), |_| list_servers());
    view! {
        <h1>"Servers"</h1>
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match servers.await {
                    Ok(servers) if servers.is_empty() => view! { <p>"No servers are registered yet."</p> }.into_any(),
                    Ok(servers) => view! { <ServersTable servers /> }.into_any(),
                    Err(error) => view! { <ErrorPage error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn ServersTable(servers: Vec<ServerSummary>) -> impl IntoView {
    view! {
        <table>
            <caption>"Registered MCP servers"</caption>
            <thead><tr>
                <th scope="col">"Server"</th>
                <th scope="col">"Status"</th>
                <th scope="col">"Capabilities"</th>
                <th scope="col">"Tools"</th>
                <th scope="col">"Apps"</th>
                <th scope="col">"Last discovery"</th>
            </tr></thead>
            <tbody>
                {servers.into_iter().map(|s| view! {
                    <tr data-slug=s.slug.clone()>
                        <td>
                            <A href=format!("/admin/servers/{}", s.slug)>{s.display_name.clone()}</A>
                            " " <code>{s.slug.clone()}</code>
                            {s.from_config.then(|| view! { " " <span class="badge">"config"</span> })}
                        </td>
                        <td><StatusBadge status=s.status.clone() /></td>
                        <td>{s.capabilities.join(", ")}</td>
                        <td>{s.tool_count}</td>
                        <td>{s.app_count}</td>
                        <td>{s.last_discovery.clone().unwrap_or_else(|| "never".into())}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

#[component]
pub fn StatusBadge(status: ServerStatus) -> impl IntoView {
    match status {
        ServerStatus::Ok => view! { <span class="status status-ok">"ok"</span> }.into_any(),
        ServerStatus::Disabled => view! { <span class="status">"disabled"</span> }.into_any(),
        ServerStatus::NeverDiscovered => {
            view! { <span class="status">"not discovered yet"</span> }.into_any()
        }
        ServerStatus::Failing(error) => {
            view! { <span class="status status-error" role="status">{format!("failing: {error}")}</span> }
                .into_any()
        }
    }
}

#[component]
fn RegisterForm() -> impl IntoView {
    let register = ServerAction::<RegisterServer>::new();
    view! {
        <section aria-labelledby="register-title" class="form-card">
            <h2 id="register-title">"Register a server"</h2>
            <p>"Streamable HTTP servers are registered here. Servers started as a process (stdio) \
                are declared in the configuration file only."</p>
            <ActionForm action=register>
                <label>"Slug" <input name="slug" required pattern="[a-z0-9\\-]{1,40}" maxlength="40"
                    aria-describedby="slug-help" /></label>
                <p id="slug-help" class="help">"Lower-case letters, digits and hyphens; at most 40."</p>
                <label>"Display name" <input name="display_name" required maxlength="100" /></label>
                <label>"URL" <input name="url" type="url" required placeholder="https://mcp.example.com/mcp" /></label>
                <CapabilityBoxes checked=vec![Capability::Tools] />
                <button type="submit" class="primary">"Register"</button>
            </ActionForm>
            <ActionError action=register />
        </section>
    }
}

/// The four capability checkboxes, named `cap_<name>`.
#[component]
pub fn CapabilityBoxes(checked: Vec<Capability>) -> impl IntoView {
    view! {
        <fieldset>
            <legend>"Approved capabilities"</legend>
            {Capability::ALL.into_iter().map(|cap| {
                let name = format!("cap_{}", cap.as_str());
                view! {
                    <label class="check">
                        <input type="checkbox" name=name checked=checked.contains(&cap) />
                        {cap.as_str()}
                    </label>
                }
            }).collect_view()}
        </fieldset>
    }
}
