use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;

use crate::auth::{SignInError, SignInMethod, safe_next_path, sign_in_options};
use crate::json;
use crate::shell::{MeResource, protected::encode_component};

#[component]
pub fn SignInPage() -> impl IntoView {
    let query = use_query_map();
    let options = json::load(|| (), |_| sign_in_options());
    let me = expect_context::<MeResource>();
    let error = move || {
        query
            .read()
            .get("error")
            .and_then(|code| SignInError::parse(&code))
    };
    let next = move || {
        query
            .read()
            .get("next")
            .filter(|n| safe_next_path(n).is_some())
            .unwrap_or("/".into())
    };
    view! {
        <Title text="Sign in" />
        <section class="sign-in" aria-labelledby="sign-in-title">
            <h1 id="sign-in-title">"Sign in to strad"</h1>
            {move || error().map(|error| view! {
                <p class="notice notice-error" role="alert" data-testid="sign-in-error"
                    data-code=error.code()>{error.message()}</p>
            })}
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let signed_in = me.await.ok().flatten();
                    let options = options.await;
                    match (signed_in, options) {
                        (Some(me), _) => view! {
                            <p>"You are signed in as " <strong>{me.email}</strong> "."</p>
                            <p><a href="/">"Continue to the console"</a></p>
                        }.into_any(),
                        (None, Ok(SignInMethod::Oidc { provider })) => {
                            let href = format!("/auth/login?next={}", encode_component(&next()));
                            view! {
                                <p>
                                    <a class="button primary" href=href rel="external">
                                        "Sign in with " {provider}
                                    </a>
                                </p>
                            }.into_any()
                        }
                        (None, Ok(SignInMethod::Local)) => view! {
                            <p>"This console runs in local mode: it has no identity provider \
                                and listens on this machine only."</p>
                            <p>"Open the one-time sign-in link the server printed when it \
                                started (a new one is printed after each use)."</p>
                        }.into_any(),
                        (None, Err(err)) => view! { <p role="alert">{err.to_string()}</p> }.into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}
