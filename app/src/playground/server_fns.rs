//! What the playground and its app cards ask the server: the tools a person may call, the
//! state of a pin, a person's pins, and revoking one. Calls themselves go to the JSON route
//! `POST /servers/<slug>/tools/call` (so the browser can cancel them), through the same
//! authorization and audit path as app calls.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;

/// A tool a person may call by hand.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlayTool {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// The tool's JSON input schema, as the server declared it.
    pub input_schema: Value,
    pub read_only: bool,
    /// The `ui://` resource it declares, when the server may show apps.
    pub app_uri: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Playground {
    pub slug: String,
    pub display_name: String,
    pub tools: Vec<PlayTool>,
    /// A token session: it may look, not call.
    pub view_only: bool,
}

/// The tools of `slug` the signed-in person may call from the playground: entitled, allowed
/// by the server's playground policy, and visible to the model (a tool hidden from the model
/// is hidden from people calling tools by hand too).
#[server(prefix = "/api", endpoint = "playground/tools", input = leptos::server_fn::codec::GetUrl)]
pub async fn playground_tools(slug: String) -> Result<Playground, AppError> {
    use crate::auth::ssr::context::RequestContext;
    use crate::auth::ssr::session::SessionKind;
    use crate::entitlements::policy::{Decision, Surface, decide};
    use crate::entitlements::ssr::authorize;
    use crate::error::Responder;
    use crate::servers::Capability;
    use crate::servers::ssr::changes::ItemKind;
    use crate::servers::ssr::registry;

    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require().await?;
    let server = authorize::entitled_server(&state.pool, &ctx, &slug)
        .await
        .map_err(|e| responder.fail(e))?;
    let policy = crate::entitlements::ssr::policies::get(&state.pool, &slug).await?;
    let apps = server.approves(Capability::Apps);
    let approved = server.approved();
    let mut tools = Vec::new();
    for item in registry::items(&state.pool, &slug).await? {
        if item.kind != ItemKind::Tool {
            continue;
        }
        let Some(facts) = authorize::tool_facts(&state.pool, &slug, &item.key).await? else {
            continue;
        };
        // Listing is allowed to a token session; calling is not (the call route says so).
        // A server not approved for tools lists none (its ceiling).
        let decision = decide(
            false,
            Surface::Playground,
            &approved,
            &policy,
            &item.key,
            Some(&facts),
        );
        if decision != Decision::Run {
            continue;
        }
        let definition: Value = serde_json::from_slice(&item.body).unwrap_or(Value::Null);
        let text = |key: &str| {
            definition
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        tools.push(PlayTool {
            name: item.key.clone(),
            title: text("title").or_else(|| {
                definition
                    .pointer("/annotations/title")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            }),
            description: text("description"),
            input_schema: definition
                .get("inputSchema")
                .cloned()
                .unwrap_or(Value::Null),
            read_only: facts.is_read_only(),
            app_uri: apps
                .then(|| {
                    item.info
                        .get("resource_uri")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .flatten(),
        });
    }
    Ok(Playground {
        slug,
        display_name: server.display_name,
        tools,
        view_only: ctx.session_kind == SessionKind::Token,
    })
}

/// One of a person's pins, as the pins page and an app card show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinSummary {
    pub slug: String,
    pub display_name: String,
    pub uri: String,
    pub digest: String,
    pub size: i64,
    /// RFC 3339.
    pub pinned_at: String,
    /// The server's copy (as discovery last saw it) is not what was pinned.
    pub differs: bool,
    /// The stored bytes still match the digest.
    pub intact: bool,
    /// What the pinned `_meta.ui` declares, and what the frame's CSP grants of it.
    pub declared_domains: Vec<String>,
    pub granted_domains: Vec<String>,
    pub permissions: Vec<String>,
}

/// Every app the signed-in person has pinned, newest first.
#[server(prefix = "/api", endpoint = "pins/mine", input = leptos::server_fn::codec::GetUrl)]
pub async fn my_pins() -> Result<Vec<PinSummary>, AppError> {
    use crate::auth::ssr::context::RequestContext;
    let state = crate::state::AppState::from_context()?;
    let ctx = RequestContext::require().await?;
    Ok(
        crate::apps::ssr::pins::summaries(&state.pool, &state.checked_pins, ctx.user.id, None)
            .await?,
    )
}

/// The signed-in person's pin of `uri` on `slug`, if any (an app card asks before loading).
#[server(prefix = "/api", endpoint = "pins/get", input = leptos::server_fn::codec::GetUrl)]
pub async fn pin_of(slug: String, uri: String) -> Result<Option<PinSummary>, AppError> {
    use crate::auth::ssr::context::RequestContext;
    use crate::entitlements::ssr::authorize;
    use crate::error::Responder;
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require().await?;
    authorize::entitled_server(&state.pool, &ctx, &slug)
        .await
        .map_err(|e| responder.fail(e))?;
    let pins = crate::apps::ssr::pins::summaries(
        &state.pool,
        &state.checked_pins,
        ctx.user.id,
        Some((&slug, &uri)),
    )
    .await?;
    Ok(pins.into_iter().next())
}

/// Deletes the signed-in person's pin (audited `app_pin_revoked`): the app cannot open again
/// until they load it again.
#[server(prefix = "/api", endpoint = "pins/revoke")]
pub async fn revoke_pin(slug: String, uri: String) -> Result<bool, AppError> {
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::ssr::context::RequestContext;
    let state = crate::state::AppState::from_context()?;
    let ctx = RequestContext::require_writer(crate::auth::Role::Member).await?;
    let mut tx = state.pool.begin().await?;
    let removed = sqlx::query_scalar!(
        "DELETE FROM pins WHERE user_id = $1 AND slug = $2 AND uri = $3 RETURNING sha256",
        ctx.user.id,
        slug,
        uri,
    )
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(digest) = &removed {
        let event = AuditEvent::AppPinRevoked {
            uri,
            sha256: digest.clone(),
        };
        writer::append(&mut tx, &ctx.actor(), &event, Some(&slug)).await?;
    }
    tx.commit().await?;
    Ok(removed.is_some())
}
