use leptos::prelude::*;

/// Admins: grant and revoke servers; who can reach each server; what a person can reach.
#[component]
pub fn AdminEntitlementsPage() -> impl IntoView {
    view! { <h1>"Entitlements"</h1> }
}
