use leptos::prelude::*;
use leptos_meta::Title;

use crate::auth::Role;
use crate::entitlements::my_servers;
use crate::json;
use crate::shell::Protected;

#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <Title text="Home" />
        <Protected children=|me| {
            let greeting = me.name.clone().unwrap_or_else(|| me.email.clone());
            let is_admin = me.has(Role::Admin);
            view! {
                <h1>"Welcome, " {greeting}</h1>
                <p>"You are signed in as " <strong data-testid="home-email">{me.email.clone()}</strong> "."</p>
                <section aria-labelledby="servers-title">
                    <h2 id="servers-title">"Your servers"</h2>
                    <MyServers is_admin email=me.email.clone() />
                </section>
                <section aria-labelledby="tokens-title">
                    <h2 id="tokens-title">"MCP clients"</h2>
                    <p><a href="/pins">"Your pinned apps"</a></p>
                    <p>"To use your servers from an MCP client, mint a "
                        <a href="/tokens">"login token"</a> "."</p>
                </section>
                {me.has(Role::Admin).then(|| view! {
                    <section aria-labelledby="admin-title">
                        <h2 id="admin-title">"Administration"</h2>
                        <ul>
                            <li><a href="/admin/servers">"Servers"</a></li>
                            <li><a href="/people">"People and roles"</a></li>
                            <li><a href="/admin/entitlements">"Entitlements"</a></li>
                            <li><a href="/admin/tokens">"All login tokens"</a></li>
                        </ul>
                    </section>
                })}
            }
        } />
    }
}

/// The servers shared with the signed-in person, by email or by their domain.
#[component]
fn MyServers(is_admin: bool, email: String) -> impl IntoView {
    let servers = json::load(|| (), |_| my_servers());
    view! {
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || {
                let email = email.clone();
                Suspend::new(async move {
                match servers.await {
                    Ok(servers) if servers.is_empty() => {
                        view! { <NoServersYet is_admin email /> }.into_any()
                    }
                    Ok(servers) => view! {
                        <ul class="my-servers">
                            {servers.into_iter().map(|s| view! {
                                <li data-slug=s.slug.clone()>{s.display_name} " " <code>{s.slug.clone()}</code>
                                    " — " <a href=format!("/servers/{}", s.slug)>"Tools"</a>
                                    " · " <a href=format!("/apps/{}", s.slug)>"App"</a></li>
                            }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(error) => view! { <p class="notice notice-error" role="alert">{error.to_string()}</p> }.into_any(),
                }
                })
            }}
        </Suspense>
    }
}

/// What a person with no server does next: an admin registers and shares one; anyone
/// else asks an admin.
#[component]
fn NoServersYet(is_admin: bool, email: String) -> impl IntoView {
    view! {
        <div class="empty-state" data-testid="no-servers">
            <p>"No MCP servers are shared with you yet."</p>
            {if is_admin {
                view! {
                    <ol class="next-steps">
                        <li><a href="/admin/servers">"Register a server"</a>
                            ": the URL of an MCP server (Streamable HTTP), or a command strad starts on stdio."</li>
                        <li><a href="/admin/entitlements">"Share it"</a>
                            " with a person or with everyone at a domain — yourself included."</li>
                        <li>"Open it: its tools in the playground, each with a form built from its schema, and its app in a sandboxed frame."</li>
                    </ol>
                }.into_any()
            } else {
                view! {
                    <p>"Ask an administrator to share a server with " <strong>{email}</strong> "."</p>
                }.into_any()
            }}
            <p class="hint">"How strad works, and how to run it: "
                <code>"README.md"</code> " and " <code>"docs/"</code> " in strad's source."</p>
        </div>
    }
}
