use leptos::prelude::*;

use super::views::ServerSummary;
use crate::error::AppError;

/// Every registered server with its status. Admins only.
#[server(prefix = "/api", endpoint = "servers/list", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_servers() -> Result<Vec<ServerSummary>, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::servers::ssr::{registry, views};

    let state = crate::state::AppState::from_context()?;
    RequestContext::require_role(Role::Admin).await?;
    let rows = registry::list_servers(&state.pool).await?;
    Ok(rows
        .iter()
        .map(|(row, tools, apps)| views::summary(row, *tools, *apps))
        .collect())
}
