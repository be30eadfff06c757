//! The console's pages as lazily loaded routes, all but the app page. Built with `cargo
//! leptos build --split`, each page's code (and what only it uses) is wasm chunks of its
//! own, fetched when the page is first shown: a first visit loads the shell and the page it
//! opens, not the whole console. The server names the chunks the page it renders needs, so
//! the browser fetches them beside the main module instead of after it.
//!
//! The app page is in the main module: the splitter made it 136 chunks, whose fetches took
//! its first load 200–450 ms past the main module's on loopback, and an app's first paint
//! waits for the page to hydrate (its bridge answers the app).
//!
//! The chunks' loader is wasm imports and exports the split macros generate, which the
//! `unsafe_code` lint counts as unsafe; this module is the only place allowed them.
#![allow(
    unsafe_code,
    reason = "the lazy-route macro links each page as a wasm import (no unsafe code of ours)"
)]

use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

use crate::pages::{
    AdminEntitlementsPage, AdminPolicyPage, AdminServerPage, AdminServersPage, AdminTokensPage,
    AppChangesPage, AuditPage, HomePage, PeoplePage, PinsPage, PlaygroundPage, SignInPage,
    TokensPage,
};

/// `Route => Page`: `Route` is the lazily loaded route that renders the component `Page`.
/// Pages load their own data, so a route's `data` is nothing.
macro_rules! lazy_pages {
    ($($route:ident => $page:ident),* $(,)?) => {$(
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                Self
            }

            fn view(_this: Self) -> AnyView {
                view! { <$page /> }.into_any()
            }
        }
    )*};
}

lazy_pages! {
    Home => HomePage,
    SignIn => SignInPage,
    People => PeoplePage,
    AdminServers => AdminServersPage,
    AdminServer => AdminServerPage,
    AdminPolicy => AdminPolicyPage,
    AdminEntitlements => AdminEntitlementsPage,
    AdminTokens => AdminTokensPage,
    Tokens => TokensPage,
    Audit => AuditPage,
    Playground => PlaygroundPage,
    Pins => PinsPage,
    AppChanges => AppChangesPage,
}
