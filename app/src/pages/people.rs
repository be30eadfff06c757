use leptos::prelude::*;
use leptos_meta::Title;

use crate::auth::{Role, list_people};
use crate::pages::ErrorPage;
use crate::shell::Protected;

/// Admins only: everyone who has signed in, with their roles.
#[component]
pub fn PeoplePage() -> impl IntoView {
    view! {
        <Title text="People" />
        <Protected role=Role::Admin children=|_| view! { <PeopleTable /> } />
    }
}

#[component]
fn PeopleTable() -> impl IntoView {
    let people = Resource::new_blocking(|| (), |_| list_people());
    view! {
        <h1>"People"</h1>
        <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
            {move || Suspend::new(async move {
                match people.await {
                    Ok(people) => view! {
                        <table>
                            <caption>"Everyone who has signed in"</caption>
                            <thead><tr>
                                <th scope="col">"Email"</th>
                                <th scope="col">"Name"</th>
                                <th scope="col">"Roles"</th>
                                <th scope="col">"Last sign-in"</th>
                            </tr></thead>
                            <tbody>
                                {people.into_iter().map(|p| view! {
                                    <tr>
                                        <td>{p.email}</td>
                                        <td>{p.name.unwrap_or_default()}</td>
                                        <td>{p.roles.join(", ")}</td>
                                        <td>{p.last_sign_in}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                    Err(err) => view! { <ErrorPage error=err /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
