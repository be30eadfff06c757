use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::auth::Role;
use crate::entitlements::{
    GrantEntitlement, GrantView, RevokeEntitlement, list_entitlements, reachable_by,
};
use crate::json;
use crate::pages::ErrorPage;
use crate::servers::list_servers;
use crate::shell::{ActionError, Protected};

/// Admins: grant and revoke servers; who can reach each server; what a person can reach.
#[component]
pub fn AdminEntitlementsPage() -> impl IntoView {
    view! {
        <Title text="Entitlements" />
        <Protected role=Role::Admin children=|_| view! { <Entitlements /> } />
    }
}

#[component]
fn Entitlements() -> impl IntoView {
    let grant = ServerAction::<GrantEntitlement>::new();
    let revoke = ServerAction::<RevokeEntitlement>::new();
    // With JavaScript the list refetches after each grant or revoke; without it, the post
    // redirects back here and the page is rendered afresh.
    let grants = json::load(
        move || (grant.version().get(), revoke.version().get()),
        |_| list_entitlements(),
    );
    view! {
        <h1>"Entitlements"</h1>
        <GrantForm grant />
        <section aria-labelledby="grants-title">
            <h2 id="grants-title">"Who can reach each server"</h2>
            <ActionError action=revoke />
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match grants.await {
                        Ok(grants) if grants.is_empty() => {
                            view! { <p>"No server is granted to anyone yet."</p> }.into_any()
                        }
                        Ok(grants) => view! { <GrantsTable grants revoke /> }.into_any(),
                        Err(error) => view! { <ErrorPage error /> }.into_any(),
                    }
                })}
            </Transition>
        </section>
        <Lookup />
    }
}

#[component]
fn GrantForm(grant: ServerAction<GrantEntitlement>) -> impl IntoView {
    let servers = json::load(|| (), |_| list_servers());
    let message = move || {
        grant.value().get().map(|result| match result {
            Ok(()) => view! { <p class="notice" role="status">"Granted."</p> }.into_any(),
            Err(e) => {
                view! { <p class="notice notice-error" role="alert">{e.to_string()}</p> }.into_any()
            }
        })
    };
    view! {
        <section aria-labelledby="grant-title" class="form-card">
            <h2 id="grant-title">"Grant a server"</h2>
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match servers.await {
                        Ok(servers) if servers.is_empty() => view! {
                            <p>"No server is registered yet. " <a href="/admin/servers">"Register one first."</a></p>
                        }.into_any(),
                        Ok(servers) => view! {
                            <ActionForm action=grant>
                                <label>"Server"
                                    <select name="slug" required>
                                        {servers.into_iter().map(|s| view! {
                                            <option value=s.slug.clone()>{format!("{} ({})", s.display_name, s.slug)}</option>
                                        }).collect_view()}
                                    </select>
                                </label>
                                <label>"Email or domain"
                                    <input name="grantee" type="text" required maxlength="254"
                                        autocomplete="off" aria-describedby="grantee-help" />
                                </label>
                                <p id="grantee-help" class="help">
                                    "A person's email (alice@example.com), or a domain (example.com) for everyone in it."
                                </p>
                                <button type="submit" class="primary">"Grant"</button>
                            </ActionForm>
                        }.into_any(),
                        Err(error) => view! { <ErrorPage error /> }.into_any(),
                    }
                })}
            </Suspense>
            {message}
        </section>
    }
}

#[component]
fn GrantsTable(grants: Vec<GrantView>, revoke: ServerAction<RevokeEntitlement>) -> impl IntoView {
    view! {
        <table>
            <caption>"Grants, by server"</caption>
            <thead><tr>
                <th scope="col">"Server"</th>
                <th scope="col">"Grantee"</th>
                <th scope="col">"Kind"</th>
                <th scope="col">"Granted at"</th>
                <th scope="col">"Action"</th>
            </tr></thead>
            <tbody>
                {grants.into_iter().map(|g| {
                    let label = format!("Revoke {} from {}", g.grantee, g.slug);
                    view! {
                        <tr data-grant-id=g.id.to_string() data-slug=g.slug.clone()>
                            <td><a href=format!("/admin/servers/{}/policy", g.slug)><code>{g.slug.clone()}</code></a></td>
                            <td>{g.grantee.clone()}</td>
                            <td><span class="badge">{if g.domain { "domain" } else { "person" }}</span></td>
                            <td><time>{g.granted_at.clone()}</time></td>
                            <td>
                                <ActionForm action=revoke>
                                    <input type="hidden" name="id" value=g.id.to_string() />
                                    <button type="submit" aria-label=label>"Revoke"</button>
                                </ActionForm>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// A plain GET form: the person is in the URL, so the answer can be bookmarked and works
/// without JavaScript.
#[component]
fn Lookup() -> impl IntoView {
    let query = use_query_map();
    let person = move || {
        query
            .read()
            .get("person")
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
    };
    let reach = json::load(person, |person| async move {
        match person {
            Some(email) => reachable_by(email.clone())
                .await
                .map(|servers| Some((email, servers))),
            None => Ok(None),
        }
    });
    view! {
        <section aria-labelledby="lookup-title">
            <h2 id="lookup-title">"What can a person reach?"</h2>
            <form method="get" class="filters" role="search" aria-label="Look up a person">
                <label>"Email"
                    <input name="person" type="email" required value=move || person().unwrap_or_default() />
                </label>
                <button type="submit">"Look up"</button>
            </form>
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match reach.await {
                        Ok(None) => ().into_any(),
                        Ok(Some((email, servers))) if servers.is_empty() => view! {
                            <p role="status">{email} " cannot reach any server."</p>
                        }.into_any(),
                        Ok(Some((email, servers))) => view! {
                            <p role="status">{email} " can reach:"</p>
                            <ul class="reachable">
                                {servers.into_iter().map(|s| view! {
                                    <li>{s.display_name} " " <code>{s.slug}</code></li>
                                }).collect_view()}
                            </ul>
                        }.into_any(),
                        Err(error) => view! { <p class="notice notice-error" role="alert">{error.to_string()}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}
