use leptos::prelude::*;

use super::views::ServerDetail;
use crate::error::AppError;

/// One server: its tools, app resources and discovery problems. Admins only.
#[server(prefix = "/api", endpoint = "servers/get", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_server(slug: String) -> Result<ServerDetail, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::error::Responder;
    use crate::servers::ssr::{registry, views};

    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    RequestContext::require_role(Role::Admin).await?;
    let row = registry::get_server(&state.pool, &slug)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    let items = registry::items(&state.pool, &slug).await?;
    Ok(views::detail(&row, &items))
}
