use leptos::prelude::*;
use leptos_meta::Title;

use crate::auth::Role;
use crate::json;
use crate::pages::ErrorPage;
use crate::pages::tokens_page::TokenTable;
use crate::shell::Protected;
use crate::tokens::{RevokeToken, list_all_tokens};

/// Admins: everyone's login tokens, with revoke.
#[component]
pub fn AdminTokensPage() -> impl IntoView {
    view! {
        <Title text="All login tokens" />
        <Protected role=Role::Admin children=|_| view! { <AllTokens /> } />
    }
}

#[component]
fn AllTokens() -> impl IntoView {
    let revoke = ServerAction::<RevokeToken>::new();
    let tokens = json::load(move || revoke.version().get(), |_| list_all_tokens());
    view! {
        <h1>"All login tokens"</h1>
        <p>"Every token anyone has minted, with its owner. A revoked token is refused from then on."</p>
        <section aria-labelledby="all-tokens-title">
            <h2 id="all-tokens-title">"Tokens"</h2>
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match tokens.await {
                        Ok(tokens) if tokens.is_empty() => view! { <p>"Nobody has minted a token yet."</p> }.into_any(),
                        Ok(tokens) => view! { <TokenTable tokens revoke show_owner=true /> }.into_any(),
                        Err(error) => view! { <ErrorPage error /> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}
