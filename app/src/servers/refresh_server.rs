use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshOutcome {
    pub changes: usize,
    pub problems: usize,
    /// Why discovery failed, when it did.
    pub error: Option<String>,
}

/// Runs discovery now (an admin's Refresh). Admins only.
#[server(prefix = "/api", endpoint = "servers/refresh")]
pub async fn refresh_server(slug: String) -> Result<RefreshOutcome, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::error::Responder;
    use crate::servers::ssr::discover::{DiscoverError, discover};

    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Admin).await?;
    let outcome = match discover(&state.pool, &state.hub, &slug, &ctx.actor()).await {
        Ok(outcome) => RefreshOutcome {
            changes: outcome.changes.len(),
            problems: outcome.problems.len(),
            error: None,
        },
        Err(DiscoverError::NotFound) => return Err(responder.fail(AppError::NotFound)),
        Err(DiscoverError::Database(err)) => return Err(err.into()),
        Err(err) => RefreshOutcome {
            changes: 0,
            problems: 0,
            error: Some(err.to_string()),
        },
    };
    leptos_axum::redirect(&format!("/admin/servers/{slug}"));
    Ok(outcome)
}
