use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::auth::Role;
use crate::json;
use crate::pages::ErrorPage;
use crate::servers::list_app_changes;
use crate::shell::Protected;

/// Auditors and admins: every change discovery saw in a server's tools and app HTML.
#[component]
pub fn AppChangesPage() -> impl IntoView {
    view! {
        <Title text="App changes" />
        <Protected children=|me| {
            if me.has(Role::Auditor) || me.has(Role::Admin) {
                view! { <AppChanges /> }.into_any()
            } else {
                view! { <crate::pages::ForbiddenPage /> }.into_any()
            }
        } />
    }
}

#[component]
fn AppChanges() -> impl IntoView {
    let query = use_query_map();
    let filter = move || {
        let q = query.read();
        (q.get("server"), q.get("since"), q.get("until"))
    };
    let changes = json::load(filter, |(slug, since, until)| {
        list_app_changes(slug, since, until)
    });
    view! {
        <h1>"App changes"</h1>
        <form method="get" class="filters" role="search" aria-label="Filter app changes">
            <label>"Server" <input name="server" value=move || filter().0.unwrap_or_default() /></label>
            <label>"Since" <input name="since" type="date" value=move || filter().1.unwrap_or_default() /></label>
            <label>"Until" <input name="until" type="date" value=move || filter().2.unwrap_or_default() /></label>
            <button type="submit">"Filter"</button>
        </form>
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match changes.await {
                    Ok(changes) if changes.is_empty() => view! { <p>"No app changes match."</p> }.into_any(),
                    Ok(changes) => view! {
                        <ol class="changes">
                            {changes.into_iter().map(|c| view! {
                                <li data-change-id=c.id>
                                    <p>
                                        <time>{c.at.clone()}</time> " · " <code>{c.slug.clone()}</code> " · "
                                        {c.item_kind.replace('_', " ")} " " <code>{c.item.clone()}</code> " "
                                        <strong>{c.change.clone()}</strong>
                                    </p>
                                    <p class="digests">
                                        "old " <code>{c.old_digest.clone().unwrap_or_else(|| "—".into())}</code>
                                        " (" {c.old_size.map(|s| format!("{s} bytes")).unwrap_or_else(|| "—".into())} ")"
                                        <br />
                                        "new " <code>{c.new_digest.clone().unwrap_or_else(|| "—".into())}</code>
                                        " (" {c.new_size.map(|s| format!("{s} bytes")).unwrap_or_else(|| "—".into())} ")"
                                    </p>
                                    <details>
                                        <summary>"Diff"</summary>
                                        <pre class="diff">{c.diff.clone()}</pre>
                                    </details>
                                </li>
                            }).collect_view()}
                        </ol>
                    }.into_any(),
                    Err(error) => view! { <ErrorPage error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
