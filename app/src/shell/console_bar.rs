use leptos::prelude::*;

use super::{MeResource, ThemeToggle};
use crate::auth::Role;

/// The bar on top of every page: product name, the signed-in person and their roles,
/// sign-out, and the theme switch.
#[component]
pub fn ConsoleBar() -> impl IntoView {
    let me = expect_context::<MeResource>();
    view! {
        <header class="console-bar">
            <a class="brand" href="/">"strad"</a>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    me.await.ok().flatten().map(|me| {
                        let is_admin = me.has(Role::Admin);
                        let is_auditor = me.has(Role::Auditor);
                        let roles = me
                            .roles
                            .iter()
                            .map(|role| view! { <li class="role">{role.as_str()}</li> })
                            .collect_view();
                        view! {
                            <nav aria-label="Console">
                                <ul>
                                    <li><a href="/">"Home"</a></li>
                                    {is_admin.then(|| view! { <li><a href="/admin/servers">"Servers"</a></li> })}
                                    {is_admin.then(|| view! { <li><a href="/admin/entitlements">"Entitlements"</a></li> })}
                                    {is_admin.then(|| view! { <li><a href="/people">"People"</a></li> })}
                                    {(is_admin || is_auditor).then(|| view! { <li><a href="/audit">"Audit log"</a></li> })}
                                    {(is_admin || is_auditor).then(|| view! { <li><a href="/audit/app-changes">"App changes"</a></li> })}
                                </ul>
                            </nav>
                            <div class="person">
                                <span class="email" data-testid="signed-in-email">{me.email.clone()}</span>
                                <ul class="roles" aria-label="Your roles">{roles}</ul>
                                <a href="/tokens">"Tokens"</a>
                                <form method="post" action="/auth/sign-out">
                                    <button type="submit">"Sign out"</button>
                                </form>
                            </div>
                        }
                    })
                })}
            </Transition>
            <ThemeToggle />
        </header>
    }
}
