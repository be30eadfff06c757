use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

use super::servers_page::{CapabilityBoxes, StatusBadge};
use crate::auth::Role;
use crate::json;
use crate::pages::ErrorPage;
use crate::servers::views::ServerDetail;
use crate::servers::{Capability, RefreshServer, SetLinkHosts, UpdateServer, get_server};
use crate::shell::{ActionError, Protected};

/// Admins: one server's tools, app resources, discovery problems, and its settings.
#[component]
pub fn AdminServerPage() -> impl IntoView {
    view! {
        <Title text="Server" />
        <Protected role=Role::Admin children=|_| view! { <ServerDetails /> } />
    }
}

#[component]
fn ServerDetails() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let detail = json::load(slug, get_server);
    view! {
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Ok(detail) => view! { <Details detail /> }.into_any(),
                    Err(error) => view! { <ErrorPage error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Details(detail: ServerDetail) -> impl IntoView {
    let s = detail.summary.clone();
    view! {
        <h1>{s.display_name.clone()} " " <code>{s.slug.clone()}</code></h1>
        <dl class="facts">
            <dt>"Status"</dt><dd><StatusBadge status=s.status.clone() /></dd>
            <dt>"Transport"</dt><dd>{s.transport.clone()} " " <code>{s.target.clone()}</code></dd>
            <dt>"Approved capabilities"</dt><dd>{if s.capabilities.is_empty() { "none".to_string() } else { s.capabilities.join(", ") }}</dd>
            <dt>"Last discovery"</dt><dd>{s.last_discovery.clone().unwrap_or_else(|| "never".into())}</dd>
        </dl>
        <RefreshButton slug=s.slug.clone() />
        <p><a href=format!("/admin/servers/{}/policy", s.slug)>"Tool policy and read-only marks"</a></p>

        <section aria-labelledby="apps-title">
            <h2 id="apps-title">"App resources"</h2>
            {if detail.apps.is_empty() {
                let why = if s.capabilities.iter().any(|c| c == "apps") { "No app resources found." }
                    else { "The apps capability is not approved, so ui:// resources are not fetched." };
                view! { <p>{why}</p> }.into_any()
            } else {
                view! {
                    <table>
                        <caption>"ui:// resources"</caption>
                        <thead><tr>
                            <th scope="col">"URI"</th><th scope="col">"Declared by"</th>
                            <th scope="col">"Size"</th><th scope="col">"Digest (SHA-256)"</th>
                            <th scope="col">"Declared domains"</th><th scope="col">"Permissions"</th>
                        </tr></thead>
                        <tbody>
                            {detail.apps.into_iter().map(|a| view! {
                                <tr data-uri=a.uri.clone()>
                                    <td><code>{a.uri.clone()}</code></td>
                                    <td>{a.declared_by.join(", ")}</td>
                                    <td>{format!("{} bytes", a.size)}</td>
                                    <td><code class="digest" title=a.digest.clone()>{a.content_digest.clone()}</code></td>
                                    <td>{a.resource_domains.join(" ")}</td>
                                    <td>{a.permissions.join(", ")}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}
        </section>

        <section aria-labelledby="tools-title">
            <h2 id="tools-title">"Tools"</h2>
            <table>
                <caption>"Tools the server lists"</caption>
                <thead><tr>
                    <th scope="col">"Name"</th><th scope="col">"Visibility"</th>
                    <th scope="col">"Read-only hint"</th><th scope="col">"App resource"</th>
                    <th scope="col">"Annotations"</th>
                </tr></thead>
                <tbody>
                    {detail.tools.into_iter().map(|t| view! {
                        <tr data-tool=t.name.clone()>
                            <td><code>{t.name.clone()}</code><br /><span class="help">{t.description.clone().unwrap_or_default()}</span></td>
                            <td>{if t.visibility.is_empty() { "none".to_string() } else { t.visibility.join(", ") }}</td>
                            <td>{if t.read_only_hint { "yes" } else { "no" }}</td>
                            <td>{t.resource_uri.clone().map(|u| view! { <code>{u}</code> })}</td>
                            <td><code>{t.annotations.clone()}</code></td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </section>

        {(!detail.problems.is_empty()).then(|| view! {
            <section aria-labelledby="problems-title">
                <h2 id="problems-title">"Discovery problems"</h2>
                <ul class="problems">
                    {detail.problems.into_iter().map(|p| view! { <li><strong>{p.item}</strong> ": " {p.problem}</li> }).collect_view()}
                </ul>
            </section>
        })}

        <LinkHostsForm slug=s.slug.clone() hosts=s.link_hosts.clone() />

        {if s.from_config {
            view! { <p class="notice">"This server is declared in the configuration file; change it there."</p> }.into_any()
        } else {
            view! { <EditForm summary=s.clone() /> }.into_any()
        }}
    }
}

#[component]
fn RefreshButton(slug: String) -> impl IntoView {
    let refresh = ServerAction::<RefreshServer>::new();
    let message = move || {
        refresh.value().get().map(|result| match result {
            Ok(outcome) => match outcome.error {
                Some(error) => format!("Discovery failed: {error}"),
                None => format!(
                    "Discovered: {} change(s), {} problem(s).",
                    outcome.changes, outcome.problems
                ),
            },
            Err(error) => error.to_string(),
        })
    };
    view! {
        <ActionForm action=refresh>
            <input type="hidden" name="slug" value=slug />
            <button type="submit">"Refresh"</button>
        </ActionForm>
        <p role="status" class="help">{message}</p>
    }
}

#[component]
fn EditForm(summary: crate::servers::views::ServerSummary) -> impl IntoView {
    let update = ServerAction::<UpdateServer>::new();
    let checked: Vec<Capability> = summary
        .capabilities
        .iter()
        .filter_map(|c| Capability::parse(c))
        .collect();
    view! {
        <section aria-labelledby="edit-title" class="form-card">
            <h2 id="edit-title">"Settings"</h2>
            <ActionForm action=update>
                <input type="hidden" name="slug" value=summary.slug.clone() />
                <label>"Display name" <input name="display_name" required maxlength="100" value=summary.display_name.clone() /></label>
                <label>"URL" <input name="url" type="url" required value=summary.target.clone() /></label>
                <CapabilityBoxes checked />
                <label class="check"><input type="checkbox" name="enabled" checked=summary.enabled /> "Enabled"</label>
                <button type="submit" class="primary">"Save"</button>
            </ActionForm>
            <ActionError action=update />
        </section>
    }
}

/// The hosts the server's app may open links to without asking: the console's own setting,
/// so servers from the configuration file have it too.
#[component]
fn LinkHostsForm(slug: String, hosts: Vec<String>) -> impl IntoView {
    let set = ServerAction::<SetLinkHosts>::new();
    let saved = move || {
        set.value().get().and_then(|result| {
            result.ok().map(|hosts| match hosts.len() {
                0 => "Saved: every link asks first.".to_string(),
                n => format!("Saved: {n} host(s)."),
            })
        })
    };
    view! {
        <section aria-labelledby="link-hosts-title" class="form-card">
            <h2 id="link-hosts-title">"Links opened without asking"</h2>
            <ActionForm action=set>
                <input type="hidden" name="slug" value=slug />
                <label>
                    "Hosts, one per line (" <code>"*.example.com"</code> " for every subdomain)"
                    <textarea name="hosts" rows="4" spellcheck="false" autocomplete="off">{hosts.join("\n")}</textarea>
                </label>
                <p class="help">"A link from the app to any other host is shown to the person first."</p>
                <button type="submit" class="primary">"Save hosts"</button>
            </ActionForm>
            <ActionError action=set />
            <p role="status" class="help">{saved}</p>
        </section>
    }
}
