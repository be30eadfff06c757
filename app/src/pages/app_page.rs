use leptos::html::Iframe;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_params_map, use_query_map};

use crate::apps::{AppStatus, AppView, OpenApp, open_app};
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
    let app = Resource::new_blocking(source, |(slug, uri)| open_app(slug, uri, None));
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

/// The host page's own CSP: nothing frames it, and its frame may load one path only.
fn set_host_policy(_slug: &str) {
    #[cfg(feature = "ssr")]
    if let (Some(options), Ok(state)) = (
        use_context::<leptos_axum::ResponseOptions>(),
        crate::state::AppState::from_context(),
    ) {
        let policy = format!(
            "frame-ancestors 'none'; frame-src {}/apps/{_slug}/frame; object-src 'none'; base-uri 'self'; form-action 'self'",
            state.public_origin
        );
        if let Ok(value) = http::HeaderValue::from_str(&policy) {
            options.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
        }
    }
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
        AppStatus::Ready => view! { <AppFrame app=app.clone() /> }.into_any(),
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

#[component]
fn RefreshPin(app: AppView) -> impl IntoView {
    let refresh = ServerAction::<OpenApp>::new();
    Effect::new(move || {
        if let Some(Ok(_)) = refresh.value().get() {
            if let Some(window) = web_sys::window() {
                let _ = window.location().reload();
            }
        }
    });
    view! {
        <ActionForm action=refresh>
            <input type="hidden" name="slug" value=app.slug.clone() />
            <input type="hidden" name="uri" value=app.uri.clone().unwrap_or_default() />
            <input type="hidden" name="refresh" value="true" />
            <button type="submit">"Refresh pinned copy"</button>
        </ActionForm>
    }
}

#[component]
fn AppFrame(app: AppView) -> impl IntoView {
    let uri = app.uri.clone().unwrap_or_default();
    let src = format!("/apps/{}/frame?uri={}", app.slug, encode_component(&uri));
    let frame: NodeRef<Iframe> = NodeRef::new();
    let closed = RwSignal::new(None::<&'static str>);
    #[cfg(feature = "hydrate")]
    {
        let (slug, uri, src, opens) = (
            app.slug.clone(),
            uri.clone(),
            src.clone(),
            app.opens_with_call,
        );
        Effect::new(move || {
            if let Some(element) = frame.get() {
                // The bridge listens before the frame's document exists, so the page's first
                // message (`ui/initialize`) cannot be missed.
                crate::apps::bridge::start(
                    element.clone(),
                    slug.clone(),
                    uri.clone(),
                    opens,
                    move |why| closed.set(Some(why)),
                );
                // Each frame load is an app session; the frame route serves a session once.
                let session = crate::apps::bridge::mint_session_id();
                element.set_src(&format!("{src}&session={session}"));
                let _ = element.focus();
            }
        });
    }
    let digest = app.digest.clone().unwrap_or_default();
    view! {
        <div class="app-bar" role="region" aria-label="App">
            <span>"App " <code>{uri.clone()}</code></span>
            <span title=digest.clone()>"Pinned " <code class="digest">{digest.chars().take(12).collect::<String>()}</code></span>
            {app.differs.then(|| view! {
                <span class="notice" role="status">"The server's copy differs from your pinned copy."</span>
                <RefreshPin app=app.clone() />
            })}
        </div>
        <noscript><p class="notice">"Apps need JavaScript: the console relays their messages."</p></noscript>
        {move || closed.get().map(|why| view! { <p class="notice notice-error" role="alert">{why}</p> })}
        <iframe
            node_ref=frame
            class="app-frame"
            title=format!("{} app", app.display_name)
            data-src=src
            sandbox="allow-scripts allow-popups allow-popups-to-escape-sandbox"
            referrerpolicy="no-referrer"
        ></iframe>
    }
}
