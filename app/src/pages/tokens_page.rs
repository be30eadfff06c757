use leptos::prelude::*;
use leptos_meta::Title;

use crate::json;
use crate::pages::ErrorPage;
use crate::shell::{ActionError, Protected};
use crate::tokens::{MintToken, RevokeToken, TokenView, list_my_tokens, take_minted_token};

/// A person's own login tokens: mint (shown once), list, revoke.
#[component]
pub fn TokensPage() -> impl IntoView {
    view! {
        <Title text="Login tokens" />
        <Protected children=|me| view! { <Tokens token_session=me.token_session /> } />
    }
}

#[component]
fn Tokens(token_session: bool) -> impl IntoView {
    let mint = ServerAction::<MintToken>::new();
    let revoke = ServerAction::<RevokeToken>::new();
    let tokens = json::load(
        move || (mint.version().get(), revoke.version().get()),
        |_| list_my_tokens(),
    );
    view! {
        <h1>"Login tokens"</h1>
        <p>"A login token lets an MCP client, or a browser, act as you without signing in."</p>
        <section aria-labelledby="use-title">
            <h2 id="use-title">"How to use a token"</h2>
            <ul>
                <li>"MCP clients: send the header " <code>"Authorization: Bearer <token>"</code>
                    " with every request to " <code>"/mcp"</code> "."</li>
                <li>"A browser: add " <code>"?token=<token>"</code> " to a console address to open a \
                    view-only session (it can look, but cannot call tools)."</li>
            </ul>
        </section>
        {if token_session {
            view! {
                <p class="notice">"You are signed in with a token. Sign in normally to mint a new one."</p>
            }.into_any()
        } else {
            view! { <MintForm mint /> }.into_any()
        }}
        <section aria-labelledby="tokens-title">
            <h2 id="tokens-title">"Your tokens"</h2>
            <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    match tokens.await {
                        Ok(tokens) if tokens.is_empty() => view! { <p>"You have no tokens."</p> }.into_any(),
                        Ok(tokens) => view! { <TokenTable tokens revoke show_owner=false /> }.into_any(),
                        Err(error) => view! { <ErrorPage error /> }.into_any(),
                    }
                })}
            </Transition>
        </section>
    }
}

#[component]
fn MintForm(mint: ServerAction<MintToken>) -> impl IntoView {
    // A token minted without script waits in the session to be shown here, once.
    let flashed = json::load(|| (), |_| take_minted_token());
    // The secret comes only from this answer: it is stored hashed and never fetched again.
    let result = move || {
        mint.value().get().or_else(|| flashed.get().and_then(|r| r.ok().flatten()).map(Ok)).map(|result| match result {
            Ok(minted) => view! {
                <div class="notice secret">
                    <p id="secret-title" role="status"><strong>"Token “" {minted.token.name} "” created."</strong>
                        " Copy it now: it will not be shown again."</p>
                    <output aria-labelledby="secret-title"><code class="digest">{minted.secret}</code></output>
                    <p class="help">"It expires " {minted.token.expires} "."</p>
                </div>
            }.into_any(),
            Err(error) => view! { <p class="notice notice-error" role="alert">{error.to_string()}</p> }.into_any(),
        })
    };
    view! {
        <section aria-labelledby="mint-title" class="form-card">
            <h2 id="mint-title">"Mint a token"</h2>
            <ActionForm action=mint>
                <label>"Name" <input name="name" type="text" required maxlength="80"
                    placeholder="laptop MCP client" autocomplete="off" /></label>
                <label>"Valid for (days)" <input name="days" type="number" required min="1" max="365"
                    value="30" aria-describedby="days-help" /></label>
                <p id="days-help" class="help">"From 1 to 365 days."</p>
                <button type="submit" class="primary">"Mint token"</button>
            </ActionForm>
            // Under Suspense so server rendering waits for the session's flashed token.
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    let _ = flashed.await;
                    result
                })}
            </Suspense>
        </section>
    }
}

/// A table of tokens with a Revoke button for each live one; shared with the admin page.
#[component]
pub fn TokenTable(
    tokens: Vec<TokenView>,
    revoke: ServerAction<RevokeToken>,
    show_owner: bool,
) -> impl IntoView {
    view! {
        <ActionError action=revoke />
        <table>
            <caption>"Login tokens"</caption>
            <thead><tr>
                {show_owner.then(|| view! { <th scope="col">"Owner"</th> })}
                <th scope="col">"Name"</th>
                <th scope="col">"Created"</th>
                <th scope="col">"Expires"</th>
                <th scope="col">"Last used"</th>
                <th scope="col">"State"</th>
                <th scope="col">"Action"</th>
            </tr></thead>
            <tbody>
                {tokens.into_iter().map(|t| {
                    let live = !t.revoked && !t.expired;
                    let state = if t.revoked { "revoked" } else if t.expired { "expired" } else { "live" };
                    let label = if show_owner {
                        format!("Revoke {} of {}", t.name, t.owner)
                    } else {
                        format!("Revoke {}", t.name)
                    };
                    let id = t.id.clone();
                    view! {
                        <tr data-token-id=t.id.clone()>
                            {show_owner.then(|| view! { <td>{t.owner.clone()}</td> })}
                            <td>{t.name.clone()}</td>
                            <td><time>{t.created.clone()}</time></td>
                            <td><time>{t.expires.clone()}</time></td>
                            <td>{t.last_used.clone().unwrap_or_else(|| "never".into())}</td>
                            <td><span class=if live { "status status-ok" } else { "status" }>{state}</span></td>
                            <td>{live.then(|| view! {
                                <ActionForm action=revoke>
                                    <input type="hidden" name="id" value=id.clone() />
                                    <button type="submit" aria-label=label.clone()>"Revoke"</button>
                                </ActionForm>
                            })}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}
