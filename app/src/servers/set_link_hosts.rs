use leptos::prelude::*;

use crate::error::AppError;

/// Replaces a server's open-link allow-list with `hosts`, one a line (SPEC §6 `ui/open-link`:
/// links to these hosts open without asking). Any server, the configuration file's too: the
/// list is the console's, not the server's. Admins only; audited with before and after.
#[server(prefix = "/api", endpoint = "servers/link-hosts")]
pub async fn set_link_hosts(slug: String, hosts: String) -> Result<Vec<String>, AppError> {
    use super::link_hosts::parse_link_hosts;
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::error::Responder;
    use crate::servers::ssr::registry;

    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Admin).await?;
    let after = parse_link_hosts(&hosts).map_err(|error| {
        responder.fail(AppError::Invalid {
            field: format!("link hosts, {error}"),
        })
    })?;
    let mut tx = state.pool.begin().await?;
    let before = registry::get_server(&mut *tx, &slug)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?
        .link_hosts;
    registry::set_link_hosts(&mut *tx, &slug, &after)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    let event = AuditEvent::LinkHostsChanged {
        before,
        after: after.clone(),
    };
    writer::append(&mut tx, &ctx.actor(), &event, Some(&slug)).await?;
    tx.commit().await?;
    tracing::info!(server.slug = %slug, link_hosts = after.len(), "link hosts changed");
    leptos_axum::redirect(&format!("/admin/servers/{slug}"));
    Ok(after)
}
