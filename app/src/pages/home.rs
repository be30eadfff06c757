use leptos::prelude::*;
use leptos_meta::Title;

use crate::auth::Role;
use crate::shell::Protected;

#[component]
pub fn HomePage() -> impl IntoView {
    view! {
        <Title text="Home" />
        <Protected children=|me| {
            let greeting = me.name.clone().unwrap_or_else(|| me.email.clone());
            view! {
                <h1>"Welcome, " {greeting}</h1>
                <p>"You are signed in as " <strong data-testid="home-email">{me.email.clone()}</strong> "."</p>
                <section aria-labelledby="servers-title">
                    <h2 id="servers-title">"Your servers"</h2>
                    <p>"No MCP servers are shared with you yet."</p>
                </section>
                {me.has(Role::Admin).then(|| view! {
                    <section aria-labelledby="admin-title">
                        <h2 id="admin-title">"Administration"</h2>
                        <p><a href="/people">"People and roles"</a></p>
                    </section>
                })}
            }
        } />
    }
}
