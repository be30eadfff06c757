use leptos::prelude::*;
use leptos_meta::Title;

use crate::auth::{PersonView, Role, list_people};
use crate::entitlements::SetRole;
use crate::json;
use crate::pages::ErrorPage;
use crate::shell::{ActionError, Protected};

/// Admins only: everyone who has signed in, with their roles, and buttons to change them.
#[component]
pub fn PeoplePage() -> impl IntoView {
    view! {
        <Title text="People" />
        <Protected role=Role::Admin children=|_| view! { <PeopleTable /> } />
    }
}

#[component]
fn PeopleTable() -> impl IntoView {
    let set_role = ServerAction::<SetRole>::new();
    let people = json::load(move || set_role.version().get(), |_| list_people());
    // A refusal (such as removing your own admin role) shows as the action's error with
    // JavaScript; without it the form post redirects back to this page.
    view! {
        <h1>"People"</h1>
        <ActionError action=set_role />
        <Transition fallback=|| view! { <p class="loading">"Loading…"</p> }>
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
                                <th scope="col">"Change roles"</th>
                            </tr></thead>
                            <tbody>
                                {people.into_iter().map(|p| view! { <PersonRow person=p set_role /> }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                    Err(err) => view! { <ErrorPage error=err /> }.into_any(),
                }
            })}
        </Transition>
    }
}

#[component]
fn PersonRow(person: PersonView, set_role: ServerAction<SetRole>) -> impl IntoView {
    let toggles = Role::ALL
        .into_iter()
        .map(|role| {
            let person = &person;
            let role = role.as_str();
            let held = person.roles.iter().any(|r| r == role);
            let (text, label) = if held {
                (
                    format!("Revoke {role}"),
                    format!("Revoke {role} from {}", person.email),
                )
            } else {
                (
                    format!("Grant {role}"),
                    format!("Grant {role} to {}", person.email),
                )
            };
            let email = person.email.clone();
            view! {
                <ActionForm action=set_role>
                    <input type="hidden" name="email" value=email.clone() />
                    <input type="hidden" name="role" value=role />
                    <input type="hidden" name="granted" value=if held { "false" } else { "true" } />
                    <button type="submit" aria-label=label>{text}</button>
                </ActionForm>
            }
        })
        .collect_view();
    view! {
        <tr data-email=person.email.clone()>
            <td>{person.email.clone()}</td>
            <td>{person.name.clone().unwrap_or_default()}</td>
            <td>{person.roles.join(", ")}</td>
            <td>{person.last_sign_in.clone()}</td>
            <td><div class="role-toggles">{toggles}</div></td>
        </tr>
    }
}
