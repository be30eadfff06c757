use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonView {
    pub email: String,
    pub name: Option<String>,
    pub roles: Vec<String>,
    /// `YYYY-MM-DD HH:MM UTC`.
    pub last_sign_in: String,
}

/// Everyone who has signed in, with their roles. Admins only.
#[server(prefix = "/api", endpoint = "people", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_people() -> Result<Vec<PersonView>, AppError> {
    use super::Role;
    use super::ssr::{context::RequestContext, users};
    use time::macros::format_description;

    // Contexts are read before the first `.await`: a render can drop this future's owner
    // while it waits, and a lookup after that would find nothing.
    let state = crate::state::AppState::from_context()?;
    let _ctx = RequestContext::require_role(Role::Admin).await?;
    let people = users::list_people(&state.pool).await?;
    Ok(people
        .into_iter()
        .map(|p| PersonView {
            email: p.email,
            name: p.display_name,
            roles: p.roles,
            last_sign_in: p
                .last_sign_in_at
                .format(format_description!(
                    "[year]-[month]-[day] [hour]:[minute] UTC"
                ))
                .unwrap_or_default(),
        })
        .collect())
}
