use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::audit::{AuditKind, VerifyAudit, list_audit};
use crate::auth::Role;
use crate::json;
use crate::pages::ErrorPage;
use crate::shell::{Protected, protected::encode_component};

/// Auditors and admins: the audit log, filtered, paged, exported, and its chain checked.
#[component]
pub fn AuditPage() -> impl IntoView {
    view! {
        <Title text="Audit log" />
        <Protected children=|me| {
            if me.has(Role::Auditor) || me.has(Role::Admin) {
                view! { <AuditLog /> }.into_any()
            } else {
                view! { <crate::pages::ForbiddenPage /> }.into_any()
            }
        } />
    }
}

const FILTERS: [&str; 5] = ["since", "until", "person", "slug", "kind"];

/// The kinds the kind filter suggests: every kind strad writes.
pub fn kind_options() -> Vec<&'static str> {
    AuditKind::ALL.iter().map(|kind| kind.as_str()).collect()
}

#[component]
fn AuditLog() -> impl IntoView {
    let query = use_query_map();
    let filters = move || {
        let q = query.read();
        (
            FILTERS.map(|key| q.get(key).filter(|v| !v.is_empty())),
            q.get("before").and_then(|b| b.parse::<i64>().ok()),
        )
    };
    let page = json::load(filters, |([since, until, person, slug, kind], before)| {
        list_audit(since, until, person, slug, kind, before)
    });
    // The filters as a query string, for the export links and the next page.
    let filter_query = move || {
        let (values, _) = filters();
        FILTERS
            .iter()
            .zip(values)
            .filter_map(|(key, value)| value.map(|v| format!("{key}={}", encode_component(&v))))
            .collect::<Vec<_>>()
            .join("&")
    };
    view! {
        <h1>"Audit log"</h1>
        <form method="get" class="filters" role="search" aria-label="Filter the audit log">
            {FILTERS.map(|key| {
                let label = match key { "since" => "Since", "until" => "Until", "person" => "Person", "slug" => "Server", _ => "Kind" };
                let kind = if matches!(key, "since" | "until") { "date" } else { "text" };
                let list = (key == "kind").then_some("audit-kinds");
                view! { <label>{label} <input name=key type=kind list=list value=move || query.read().get(key).unwrap_or_default() /></label> }
            }).collect_view()}
            <datalist id="audit-kinds">
                {kind_options().into_iter().map(|name| view! { <option value=name /> }).collect_view()}
            </datalist>
            <button type="submit">"Filter"</button>
        </form>
        <p class="exports">
            <a href=move || format!("/audit/export.csv?{}", filter_query()) rel="external" download="">"Export CSV"</a>
            " · "
            <a href=move || format!("/audit/export.json?{}", filter_query()) rel="external" download="">"Export JSON"</a>
        </p>
        <ChainCheck />
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(page) if page.rows.is_empty() => view! { <p>"No events match."</p> }.into_any(),
                    Ok(page) => {
                        let next = page.next_before.map(|before| {
                            let query = filter_query();
                            let sep = if query.is_empty() { "" } else { "&" };
                            format!("/audit?{query}{sep}before={before}")
                        });
                        view! {
                            <table class="audit">
                                <caption>"Events, newest first"</caption>
                                <thead><tr>
                                    <th scope="col">"#"</th><th scope="col">"When"</th><th scope="col">"Who"</th>
                                    <th scope="col">"Kind"</th><th scope="col">"Server"</th><th scope="col">"Details"</th>
                                </tr></thead>
                                <tbody>
                                    {page.rows.into_iter().map(|r| {
                                        let kind = r.kind.clone();
                                        view! {
                                            <tr data-kind=kind data-id=r.id>
                                                <td>{r.id}</td>
                                                <td>{r.at}</td>
                                                <td>{r.actor.unwrap_or_else(|| "strad".into())}</td>
                                                <td><code>{r.kind}</code></td>
                                                <td>{r.slug.unwrap_or_default()}</td>
                                                <td><code class="payload">{r.payload}</code></td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                            {next.map(|href| view! { <p><a href=href>"Older events"</a></p> })}
                        }.into_any()
                    }
                    Err(error) => view! { <ErrorPage error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn ChainCheck() -> impl IntoView {
    let verify = ServerAction::<VerifyAudit>::new();
    let report = move || {
        verify.value().get().map(|result| match result {
            Ok(r) => {
                let verdict = match r.first_broken {
                    None => format!("The chain holds: {} rows verified.", r.rows),
                    Some(id) => format!("The chain is broken at row {id}."),
                };
                // The head, to write down elsewhere: a log later cut short after it shows.
                let head = match r.head {
                    Some(head) => view! {
                        " Its head is row " {head.id} ", SHA-256 "
                        <code class="digest">{head.hash}</code> "."
                    }
                    .into_any(),
                    None => " The log is empty.".into_any(),
                };
                view! { {verdict} {head} }.into_any()
            }
            Err(error) => error.to_string().into_any(),
        })
    };
    view! {
        <ActionForm action=verify>
            <button type="submit">"Verify the chain"</button>
        </ActionForm>
        <p role="status" data-testid="chain-report">{report}</p>
    }
}
