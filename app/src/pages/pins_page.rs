//! `/pins`: every app the person has pinned (SPEC §7), with Refresh and Revoke. Works
//! without JavaScript (the forms post to the server functions).

use leptos::prelude::*;
use leptos_meta::Title;

use crate::apps::OpenApp;
use crate::json;
use crate::playground::{RevokePin, my_pins};
use crate::shell::{ActionError, Protected};

#[component]
pub fn PinsPage() -> impl IntoView {
    view! {
        <Title text="Pinned apps" />
        <Protected children=|_| view! { <PinsBody /> } />
    }
}

#[component]
fn PinsBody() -> impl IntoView {
    let refresh = ServerAction::<OpenApp>::new();
    let revoke = ServerAction::<RevokePin>::new();
    let pins = json::load(
        move || (refresh.version().get(), revoke.version().get()),
        |_| my_pins(),
    );
    view! {
        <h1>"Pinned apps"</h1>
        <p class="help">"The first time you open an app, strad pins the exact copy the server sent; \
            you keep getting that copy until you refresh it on purpose."</p>
        <ActionError action=refresh />
        <ActionError action=revoke />
        <Suspense fallback=|| view! { <p class="loading" role="status">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match pins.await {
                    Ok(pins) if pins.is_empty() => view! { <p>"You have no pinned apps."</p> }.into_any(),
                    Ok(pins) => view! {
                        <table class="pins">
                            <caption class="sr-only">"Your pinned apps"</caption>
                            <thead><tr>
                                <th scope="col">"Server"</th><th scope="col">"App"</th><th scope="col">"Digest"</th>
                                <th scope="col">"Size"</th><th scope="col">"Pinned"</th><th scope="col">"Server's copy"</th>
                                <th scope="col">"Actions"</th>
                            </tr></thead>
                            <tbody>
                                {pins.into_iter().map(|p| {
                                    let state = if !p.intact { "corrupt: unavailable" } else if p.differs { "differs" } else { "same" };
                                    let href = format!("/apps/{}?uri={}", p.slug, crate::shell::protected::encode_component(&p.uri));
                                    let (slug, uri) = (p.slug.clone(), p.uri.clone());
                                    let (slug2, uri2, row_slug) = (p.slug.clone(), p.uri.clone(), p.slug.clone());
                                    let (uri_shown, uri_sr1, uri_sr2) = (p.uri.clone(), format!(" {}", p.uri), format!(" {}", p.uri));
                                    view! {
                                        <tr data-slug=row_slug>
                                            <td>{p.display_name.clone()} " " <code>{p.slug.clone()}</code></td>
                                            <td><a href=href><code>{uri_shown}</code></a></td>
                                            <td><code class="digest" title=p.digest.clone()>{p.digest.chars().take(12).collect::<String>()}</code></td>
                                            <td>{format!("{} bytes", p.size)}</td>
                                            <td><time datetime=p.pinned_at.clone()>{p.pinned_at.clone()}</time></td>
                                            <td>{state}</td>
                                            <td>
                                                <ActionForm action=refresh>
                                                    <input type="hidden" name="slug" value=slug />
                                                    <input type="hidden" name="uri" value=uri />
                                                    <input type="hidden" name="refresh" value="true" />
                                                    <button type="submit">"Refresh"<span class="sr-only">{uri_sr1}</span></button>
                                                </ActionForm>
                                                <ActionForm action=revoke>
                                                    <input type="hidden" name="slug" value=slug2 />
                                                    <input type="hidden" name="uri" value=uri2 />
                                                    <button type="submit">"Revoke"<span class="sr-only">{uri_sr2}</span></button>
                                                </ActionForm>
                                            </td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                    Err(error) => view! { <p class="notice notice-error" role="alert">{error.to_string()}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}
