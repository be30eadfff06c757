// The form's fields are the server function's arguments, one each; the macro's generated
// client function carries them all.
#![allow(clippy::too_many_arguments)]

use leptos::prelude::*;

use crate::error::AppError;

/// Edits a UI-registered server: name, URL, approved capabilities, enabled. Servers from
/// the configuration file are read-only here. Admins only; audited with old and new.
#[server(prefix = "/api", endpoint = "servers/update")]
pub async fn update_server(
    slug: String,
    display_name: String,
    url: String,
    cap_tools: Option<String>,
    cap_prompts: Option<String>,
    cap_resources: Option<String>,
    cap_apps: Option<String>,
    enabled: Option<String>,
) -> Result<String, AppError> {
    use super::ssr::form;
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::error::Responder;
    use crate::servers::ssr::registry;

    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Admin).await?;
    let mut tx = state.pool.begin().await?;
    let old = registry::get_server(&mut *tx, &slug)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    if old.from_config() {
        return Err(responder.fail(AppError::Invalid {
            field: "server (declared in the configuration file)".into(),
        }));
    }
    let boxes = [cap_tools, cap_prompts, cap_resources, cap_apps];
    let spec = form::http_server(
        old.slug.clone(),
        &display_name,
        &url,
        boxes,
        enabled.is_some(),
    )
    .map_err(|e| responder.fail(e))?;
    let new = registry::update_server(&mut *tx, &spec)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    let event = AuditEvent::ServerChanged {
        old: form::audit_payload(&old),
        new: form::audit_payload(&new),
        reason: None,
    };
    writer::append(&mut tx, &ctx.actor(), &event, Some(&new.slug)).await?;
    tx.commit().await?;
    tracing::info!(server.slug = %new.slug, "server changed");

    state.hub.forget(&new.slug).await;
    if new.enabled {
        let _ =
            super::ssr::discover::discover(&state.pool, &state.hub, &new.slug, &ctx.actor()).await;
    }
    leptos_axum::redirect(&format!("/admin/servers/{}", new.slug));
    Ok(new.slug)
}
