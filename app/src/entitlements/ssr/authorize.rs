//! The one authorization path for using a server: signed in → entitled → policy. Every
//! route and server function that uses a server goes through here.

use sqlx::PgPool;

use super::{grants, marks, policies};
use crate::auth::ssr::context::RequestContext;
use crate::auth::ssr::session::SessionKind;
use crate::entitlements::policy::{Decision, Surface, ToolFacts, decide};
use crate::error::AppError;
use crate::servers::ssr::changes::ItemKind;
use crate::servers::ssr::discovery::{ToolInfo, Visibility};
use crate::servers::ssr::registry::{self, ServerRow};

/// The server, when `ctx` is entitled to it. A slug that does not exist answers exactly like
/// one that is not granted (403), so the answer says nothing about which slugs exist.
pub async fn entitled_server(pool: &PgPool, ctx: &RequestContext, slug: &str) -> Result<ServerRow, AppError> {
    if !grants::is_entitled(pool, &ctx.user.email, slug).await? {
        return Err(AppError::Forbidden);
    }
    registry::get_server(pool, slug).await?.ok_or(AppError::Forbidden)
}

/// The decision for calling `tool` of `slug` from `surface`, after the entitlement check.
pub async fn tool_call(
    pool: &PgPool,
    ctx: &RequestContext,
    slug: &str,
    tool: &str,
    surface: Surface,
) -> Result<Decision, AppError> {
    entitled_server(pool, ctx, slug).await?;
    let policy = policies::get(pool, slug).await?;
    let facts = tool_facts(pool, slug, tool).await?;
    Ok(decide(ctx.session_kind == SessionKind::Token, surface, &policy, tool, facts.as_ref()))
}

/// What discovery and the admin's marks say of one tool; `None` when the server did not list it.
pub async fn tool_facts(pool: &PgPool, slug: &str, tool: &str) -> Result<Option<ToolFacts>, AppError> {
    let info: Option<serde_json::Value> =
        sqlx::query_scalar("SELECT info FROM server_items WHERE slug = $1 AND kind = $2 AND key = $3")
            .bind(slug)
            .bind(ItemKind::Tool.as_str())
            .bind(tool)
            .fetch_optional(pool)
            .await?;
    let Some(info) = info.and_then(|v| serde_json::from_value::<ToolInfo>(v).ok()) else { return Ok(None) };
    let marked = marks::marked(pool, slug).await?.iter().any(|t| t == tool);
    Ok(Some(ToolFacts {
        visible_to_model: info.visibility.contains(&Visibility::Model),
        visible_to_app: info.visibility.contains(&Visibility::App),
        read_only_hint: info.read_only_hint,
        marked_read_only: marked,
    }))
}
