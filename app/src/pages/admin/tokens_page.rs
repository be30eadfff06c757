use leptos::prelude::*;

/// Admins: everyone's login tokens, with revoke.
#[component]
pub fn AdminTokensPage() -> impl IntoView {
    view! { <h1>"All login tokens"</h1> }
}
