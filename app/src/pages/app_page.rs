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
            "frame-ancestors 'none'; frame-src {}/apps/{_slug}/frame/; object-src 'none'; base-uri 'self'; form-action 'self'",
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

/// Where the app is, for the status line above the frame (the hydrated bridge moves it on).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
enum Phase {
    /// The frame's document is being fetched.
    Loading,
    /// The document loaded; the page has not finished its handshake.
    Starting,
    /// The handshake is done and nothing is pending.
    Running,
    /// The host is calling the declaring tool for the page.
    Opening(String),
    /// The opening call failed; the page was told.
    OpeningFailed(String),
    /// The page has not finished its handshake after a while.
    Silent,
    /// The frame is gone: why, when the app caused it.
    Closed(Option<&'static str>),
}

#[component]
fn AppStatusLine(phase: RwSignal<Phase>) -> impl IntoView {
    move || {
        let (text, busy, alert) = match phase.get() {
            Phase::Loading => ("Loading the app…".to_string(), true, false),
            Phase::Starting => ("Starting the app…".to_string(), true, false),
            Phase::Opening(tool) => (format!("Running {tool} for the app…"), true, false),
            Phase::Running | Phase::Closed(None) => return None,
            Phase::OpeningFailed(reason) => (
                format!("The app opened, but its first call failed: {reason}"),
                false,
                true,
            ),
            Phase::Silent => (
                "The app has not started: it loaded but never completed its handshake with the console. \
                 It may not be an MCP App, or its script failed."
                    .to_string(),
                false,
                true,
            ),
            Phase::Closed(Some(why)) => (why.to_string(), false, true),
        };
        let class = if alert {
            "notice notice-error app-status"
        } else {
            "notice app-status"
        };
        Some(view! {
            <p class=class role=if alert { "alert" } else { "status" } aria-live="polite">
                {busy.then(|| view! { <progress class="app-progress" aria-label="Progress"></progress> " " })}
                {text}
            </p>
        })
    }
}

#[component]
fn AppFrame(app: AppView) -> impl IntoView {
    let uri = app.uri.clone().unwrap_or_default();
    // The ticket is this frame load's app session. The frame's query is the app's `uri`
    // first, then the host's own params and hash (SPEC §6 "Location"), added once hydrated.
    let base = format!(
        "/apps/{}/frame/{}",
        app.slug,
        app.ticket.clone().unwrap_or_default()
    );
    let src = format!("{base}?uri={}", encode_component(&uri));
    let frame: NodeRef<Iframe> = NodeRef::new();
    let phase = RwSignal::new(Phase::Loading);
    #[cfg(feature = "hydrate")]
    {
        use crate::apps::bridge::{self, Event};
        let opening_tool = app
            .opens_with_call
            .then(|| app.declaring_tool.clone())
            .flatten();
        let (slug, uri) = (app.slug.clone(), uri.clone());
        let src = {
            let location = web_sys::window().map(|w| w.location());
            let search = location
                .as_ref()
                .and_then(|l| l.search().ok())
                .unwrap_or_default();
            let hash = location
                .as_ref()
                .and_then(|l| l.hash().ok())
                .unwrap_or_default();
            format!(
                "{base}?{}{hash}",
                crate::apps::location::frame_query(&uri, &search)
            )
        };
        let navigate = leptos_router::hooks::use_navigate();
        Effect::new(move || {
            let Some(element) = frame.get() else { return };
            // The bridge listens before the frame's document exists, so the page's first
            // message (`ui/initialize`) cannot be missed.
            let handle = bridge::start(
                element.clone(),
                slug.clone(),
                uri.clone(),
                opening_tool.clone(),
                move |event| match event {
                    Event::Loaded => {
                        phase.set(Phase::Starting);
                        // An app that never answers is said so, not left as a blank box.
                        set_timeout(
                            move || {
                                if phase.get_untracked() == Phase::Starting {
                                    phase.set(Phase::Silent);
                                }
                            },
                            std::time::Duration::from_secs(10),
                        );
                    }
                    Event::Initialized => phase.set(Phase::Running),
                    Event::OpeningCall { tool } => phase.set(Phase::Opening(tool)),
                    Event::OpeningDone => phase.set(Phase::Running),
                    Event::OpeningFailed { reason } => phase.set(Phase::OpeningFailed(reason)),
                    Event::Closed { why } => phase.set(Phase::Closed(why)),
                },
            );
            // The document loads only now, with the bridge listening.
            element.set_src(&src);
            let _ = element.focus();
            leave_through_teardown(handle, navigate.clone());
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
        <AppStatusLine phase />
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

/// The frame is removed only after `ui/resource-teardown`: a console link clicked while the
/// app runs waits for the app's answer (briefly) before the router moves on; when the page
/// itself goes away (Back, a closed tab) the request is sent without waiting.
#[cfg(feature = "hydrate")]
fn leave_through_teardown(
    bridge: crate::apps::bridge::Bridge,
    navigate: impl Fn(&str, leptos_router::NavigateOptions) + Clone + 'static,
) {
    use leptos::wasm_bindgen::JsCast;
    use leptos::wasm_bindgen::prelude::Closure;
    use send_wrapper::SendWrapper;

    let Some(window) = web_sys::window() else {
        return;
    };
    let on_click_bridge = bridge.clone();
    let on_click =
        Closure::<dyn FnMut(web_sys::MouseEvent)>::new(move |ev: web_sys::MouseEvent| {
            if !on_click_bridge.is_open()
                || ev.default_prevented()
                || ev.button() != 0
                || ev.meta_key()
                || ev.alt_key()
                || ev.ctrl_key()
                || ev.shift_key()
            {
                return;
            }
            let Some(anchor) = ev
                .target()
                .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                .and_then(|e| e.closest("a[href]").ok().flatten())
                .and_then(|e| e.dyn_into::<web_sys::HtmlAnchorElement>().ok())
            else {
                return;
            };
            let same_origin = web_sys::window()
                .and_then(|w| w.location().origin().ok())
                .is_some_and(|origin| origin == anchor.origin());
            if !same_origin || !anchor.target().is_empty() || anchor.has_attribute("download") {
                return;
            }
            ev.prevent_default();
            let to = format!("{}{}{}", anchor.pathname(), anchor.search(), anchor.hash());
            let (bridge, navigate) = (on_click_bridge.clone(), navigate.clone());
            wasm_bindgen_futures::spawn_local(async move {
                bridge.teardown("the person left the app").await;
                navigate(&to, Default::default());
            });
        });
    let on_hide_bridge = bridge.clone();
    let on_hide = Closure::<dyn FnMut()>::new(move || {
        on_hide_bridge.teardown_now("the page was closed");
    });
    let _ = window.add_event_listener_with_callback_and_bool(
        "click",
        on_click.as_ref().unchecked_ref(),
        true,
    );
    let _ = window.add_event_listener_with_callback("pagehide", on_hide.as_ref().unchecked_ref());
    let held = SendWrapper::new((window, on_click, on_hide, bridge));
    on_cleanup(move || {
        let (window, on_click, on_hide, bridge) = held.take();
        let _ = window.remove_event_listener_with_callback_and_bool(
            "click",
            on_click.as_ref().unchecked_ref(),
            true,
        );
        let _ = window
            .remove_event_listener_with_callback("pagehide", on_hide.as_ref().unchecked_ref());
        // Still open here: the route changed without a click (Back, Forward).
        bridge.teardown_now("the person left the app");
    });
}
