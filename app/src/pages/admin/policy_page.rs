use leptos::prelude::*;

/// Admins: a server's tool policy and read-only marks.
#[component]
pub fn AdminPolicyPage() -> impl IntoView {
    view! { <h1>"Tool policy"</h1> }
}
