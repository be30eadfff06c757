//! The document shell, the router and the console bar every page sits under.

mod action_error;
mod console_bar;
mod lazy_pages;
pub mod policy;
pub mod protected;
mod theme;

use leptos::prelude::*;
use leptos_meta::{HashedStylesheet, MetaTags, Title, provide_meta_context};
use leptos_router::{
    Lazy, SsrMode,
    components::{Route, Router, Routes},
    path,
};

pub use action_error::ActionError;
pub use console_bar::ConsoleBar;
pub use protected::{MeResource, Protected};
pub use theme::{Theme, ThemeToggle};

use crate::auth::get_me;
use crate::json;
use crate::pages::{AppPage, NotFoundPage};
use lazy_pages as page;

/// The HTML document around the app. `theme` comes from the person's saved choice so the
/// first paint is already in the right colours, without an inline script.
pub fn shell(options: leptos::config::LeptosOptions) -> impl IntoView {
    let theme = Theme::from_request().map(Theme::as_str);
    policy::set_console_policy(None);
    view! {
        <!DOCTYPE html>
        <html lang="en" data-theme=theme>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <meta name="color-scheme" content="light dark" />
                <AutoReload options=options.clone() />
                <HashedStylesheet options=options.clone() id="leptos" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let me: MeResource = json::load(|| (), |_| get_me());
    provide_context(me);

    // Runs only in the browser: marks the document once the wasm has taken over, which
    // is what the browser tests wait for before interacting.
    Effect::new(|| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });

    view! {
        <Title formatter=|text: String| {
            if text.is_empty() { "strad".to_string() } else { format!("{text} · strad") }
        } />
        <Router>
            <a class="skip-link" href="#main">"Skip to content"</a>
            <ConsoleBar />
            <main id="main" tabindex="-1">
                <Routes fallback=NotFoundPage>
                    <Route path=path!("/") view={Lazy::<page::Home>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/sign-in") view={Lazy::<page::SignIn>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/people") view={Lazy::<page::People>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/admin/servers") view={Lazy::<page::AdminServers>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/admin/servers/:slug") view={Lazy::<page::AdminServer>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/admin/servers/:slug/policy") view={Lazy::<page::AdminPolicy>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/admin/entitlements") view={Lazy::<page::AdminEntitlements>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/admin/tokens") view={Lazy::<page::AdminTokens>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/tokens") view={Lazy::<page::Tokens>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/audit") view={Lazy::<page::Audit>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/apps/:slug") view=AppPage ssr=SsrMode::Async />
                    <Route path=path!("/servers/:slug") view={Lazy::<page::Playground>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/pins") view={Lazy::<page::Pins>::new()} ssr=SsrMode::Async />
                    <Route path=path!("/audit/app-changes") view={Lazy::<page::AppChanges>::new()} ssr=SsrMode::Async />
                </Routes>
            </main>
        </Router>
    }
}
