use leptos::prelude::*;

use crate::error::AppError;

/// Registers a Streamable HTTP server (stdio servers come only from the configuration
/// file) and runs its first discovery. Admins only; audited with the registration.
#[server(prefix = "/api", endpoint = "servers/register")]
pub async fn register_server(
    slug: String,
    display_name: String,
    url: String,
    cap_tools: Option<String>,
    cap_prompts: Option<String>,
    cap_resources: Option<String>,
    cap_apps: Option<String>,
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
    let slug = form::slug(&slug).map_err(|e| responder.fail(e))?;
    let boxes = [cap_tools, cap_prompts, cap_resources, cap_apps];
    let spec =
        form::http_server(slug, &display_name, &url, boxes, true).map_err(|e| responder.fail(e))?;
    let mut tx = state.pool.begin().await?;
    let row = match registry::insert_server(&mut *tx, &spec).await {
        Ok(row) => row,
        Err(err) if form::is_constraint(&err, "servers_pkey") => {
            return Err(responder.fail(AppError::Invalid {
                field: "slug (already taken)".into(),
            }));
        }
        Err(err) => return Err(err.into()),
    };
    let event = AuditEvent::ServerRegistered {
        server: form::audit_payload(&row),
    };
    writer::append(&mut tx, &ctx.actor(), &event, Some(&row.slug)).await?;
    tx.commit().await?;
    tracing::info!(server.slug = %row.slug, "server registered");

    // The first discovery runs now; a failure is recorded on the server, not the form.
    let _ = super::ssr::discover::discover(&state.pool, &state.hub, &row.slug, &ctx.actor()).await;
    leptos_axum::redirect(&format!("/admin/servers/{}", row.slug));
    Ok(row.slug)
}
