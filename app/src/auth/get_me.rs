use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use super::Role;
use crate::error::AppError;

/// The signed-in person as the browser sees them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Me {
    pub email: String,
    pub name: Option<String>,
    pub roles: Vec<Role>,
    /// Signed in from a login token: may view, may not call tools.
    pub token_session: bool,
}

impl Me {
    pub fn has(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }
}

/// The signed-in person, or `None` for an anonymous visitor (not an error: the shell asks
/// this on every page to draw the console bar).
#[server(prefix = "/api", endpoint = "me", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_me() -> Result<Option<Me>, AppError> {
    use super::ssr::context::RequestContext;
    match RequestContext::load().await? {
        Some(ctx) => Ok(Some(ctx.me())),
        None => Ok(None),
    }
}
