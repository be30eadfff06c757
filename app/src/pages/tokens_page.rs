use leptos::prelude::*;

/// A person's own login tokens: mint (shown once), list, revoke.
#[component]
pub fn TokensPage() -> impl IntoView {
    view! { <h1>"Login tokens"</h1> }
}
