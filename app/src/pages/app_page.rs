use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_params_map, use_query_map};

use crate::apps::frame::{AppFrame, Opening};
use crate::apps::{AppStatus, AppView, RefreshPin, open_app};
use crate::json;
use crate::pages::ErrorPage;
use crate::shell::{Protected, protected::encode_component};

/// `/apps/<slug>`: a thin bar and one sandboxed frame holding the app (SPEC §6).
#[component]
pub fn AppPage() -> impl IntoView {
    view! {
        <Title text="App" />
        <Protected children=|_| view! { <AppHost /> } />
    }
}

#[component]
fn AppHost() -> impl IntoView {
    let params = use_params_map();
    let query = use_query_map();
    let source = move || {
        (
            params.read().get("slug").unwrap_or_default(),
            query.read().get("uri"),
        )
    };
    let app = json::load(source, |(slug, uri)| open_app(slug, uri, None));
    view! {
        <Suspense fallback=|| view! { <p class="loading" role="status">"Opening the app…"</p> }>
            {move || Suspend::new(async move {
                match app.await {
                    Ok(view) => view! { <AppBody app=view /> }.into_any(),
                    Err(error) => view! { <ErrorPage error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The host page's own CSP: the console's, and its frame may load one path only.
fn set_host_policy(slug: &str) {
    crate::shell::policy::set_console_policy(Some(format!("/apps/{slug}/frame/")));
}

#[component]
fn AppBody(app: AppView) -> impl IntoView {
    set_host_policy(&app.slug);
    let heading = view! { <h1 class="app-title">{app.display_name.clone()} " " <code>{app.slug.clone()}</code></h1> };
    let body = match app.status.clone() {
        AppStatus::CrossSite => view! { <CrossSiteGuard slug=app.slug.clone() /> }.into_any(),
        AppStatus::NoApp => view! { <p class="notice" role="status">"This server has no app to show."</p> }.into_any(),
        AppStatus::Unavailable(why) => view! {
            <p class="notice notice-error" role="alert">{format!("The app could not be opened: {why}")}</p>
        }.into_any(),
        AppStatus::Corrupt => view! {
            <p class="notice notice-error" role="alert">"Your pinned copy of this app is corrupt, so it is not shown. \
                Refresh it to pin the server's current copy."</p>
            <RefreshPin app=app.clone() />
        }.into_any(),
        AppStatus::Ready => view! { <AppFrame app=app.clone() opening=Opening::Call /> }.into_any(),
    };
    view! { {heading} {body} }
}

/// A link another site started: nothing has run. Open is a same-origin link to the same
/// place (the hash is carried over once the page is hydrated).
#[component]
fn CrossSiteGuard(slug: String) -> impl IntoView {
    let location = use_location();
    let href = move || {
        let search = location.search.get();
        let hash = location.hash.get();
        let search = search.trim_start_matches('?');
        let query = if search.is_empty() {
            String::new()
        } else {
            format!("?{search}")
        };
        format!("/apps/{}{query}{hash}", encode_component(&slug))
    };
    view! {
        <section class="notice" aria-labelledby="guard-title">
            <h2 id="guard-title">"This link came from another site"</h2>
            <p>"Nothing has run. Open the app only if you meant to."</p>
            <p><a class="button primary" href=href>"Open"</a></p>
        </section>
    }
}
