//! One discovery of one server: list, read, fingerprint, compare with what was stored, and
//! commit the new items together with one app-change audit event per difference.

use serde_json::{Value, json};
use sqlx::PgPool;

use super::changes::{self, AppChange, Item, ItemKind};
use super::client::{Hub, McpError};
use super::discovery::{self, ItemProblem};
use super::registry::{self, ServerRow};
use crate::audit::ssr::writer::{self, Actor, AuditEvent};
use crate::servers::Capability;

#[derive(Debug, thiserror::Error)]
pub enum DiscoverError {
    #[error("no such server")]
    NotFound,
    #[error("the server is disabled")]
    Disabled,
    #[error("{0}")]
    Mcp(#[from] McpError),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub changes: Vec<AppChange>,
    pub problems: Vec<ItemProblem>,
    pub tools: usize,
    pub apps: usize,
}

/// Discovers `slug` and records the result (an error included) on the server's row.
pub async fn discover(
    pool: &PgPool,
    hub: &Hub,
    slug: &str,
    actor: &Actor,
) -> Result<Outcome, DiscoverError> {
    let server = registry::get_server(pool, slug)
        .await?
        .ok_or(DiscoverError::NotFound)?;
    if !server.enabled {
        return Err(DiscoverError::Disabled);
    }
    match fetch(hub, &server).await {
        Ok((items, problems)) => commit(pool, &server, items, problems, actor).await,
        Err(err) => {
            tracing::error!(server.slug = %slug, error.message = %err, "discovery failed");
            registry::record_discovery(pool, slug, Some(&err.to_string()), &json!([])).await?;
            Err(err.into())
        }
    }
}

/// Asks the server for everything discovery needs. Only a failure of the tool or resource
/// list fails the whole discovery; a bad item is a problem of that item.
async fn fetch(hub: &Hub, server: &ServerRow) -> Result<(Vec<Item>, Vec<ItemProblem>), McpError> {
    let endpoint = server
        .endpoint()
        .ok_or_else(|| McpError::Connect("the server has no usable endpoint".into()))?;
    let mut problems = Vec::new();
    let mut items = Vec::new();

    let raw_tools = hub.list_tools(&server.slug, &endpoint).await?;
    let mut tools = Vec::new();
    for raw in &raw_tools {
        match discovery::discover_tool(raw) {
            Some(tool) => tools.push(tool),
            None => problems.push(ItemProblem {
                item: "a tool".into(),
                problem: "has no name".into(),
            }),
        }
    }
    for tool in &tools {
        if let Some(problem) = &tool.info.problem {
            problems.push(ItemProblem {
                item: format!("tool {}", tool.info.name),
                problem: problem.clone(),
            });
        }
        let definition: Value = serde_json::from_str(&tool.canonical).unwrap_or(Value::Null);
        let pretty = super::canonical::pretty_canonical(&definition);
        items.push(Item {
            kind: ItemKind::Tool,
            key: tool.info.name.clone(),
            digest: tool.digest.clone(),
            size: tool.canonical.len() as i64,
            body: pretty.into_bytes(),
            info: serde_json::to_value(&tool.info).unwrap_or(Value::Null),
        });
    }

    // Without `apps` approved, ui:// resources are never fetched (SPEC §4).
    if server.approves(Capability::Apps) {
        let resources =
            hub.list_resources(&server.slug, &endpoint)
                .await
                .or_else(|err| match err {
                    // A server without resources at all answers "method not found".
                    McpError::Server(_) => Ok(Vec::new()),
                    other => Err(other),
                })?;
        for uri in discovery::app_resource_candidates(&tools, &resources) {
            let entry = resources
                .iter()
                .find(|r| r.get("uri").and_then(Value::as_str) == Some(uri.as_str()));
            let read = hub
                .read_resource(&server.slug, &endpoint, &uri)
                .await
                .map_err(|e| e.to_string());
            match read.and_then(|result| {
                discovery::app_resource(&uri, entry, &result, hub.settings().resource_limit)
            }) {
                Ok(app) => items.push(Item {
                    kind: ItemKind::AppResource,
                    key: app.uri.clone(),
                    digest: app.digest.clone(),
                    size: app.bytes.len() as i64,
                    info: json!({
                        "content_digest": app.content_digest,
                        "meta_ui": app.meta_ui,
                        "resource_domains": app.resource_domains,
                        "permissions": app.permissions,
                    }),
                    body: app.bytes,
                }),
                Err(problem) => problems.push(ItemProblem {
                    item: format!("resource {uri}"),
                    problem,
                }),
            }
        }
    }
    Ok((items, problems))
}

async fn commit(
    pool: &PgPool,
    server: &ServerRow,
    mut items: Vec<Item>,
    problems: Vec<ItemProblem>,
    actor: &Actor,
) -> Result<Outcome, DiscoverError> {
    let slug = server.slug.as_str();
    let mut tx = pool.begin().await?;
    // One discovery of a server at a time, across processes: two would both see the old
    // items and write the same change twice.
    sqlx::query!(
        "SELECT FROM pg_advisory_xact_lock(hashtext('strad.discovery.' || $1))",
        slug,
    )
    .execute(&mut *tx)
    .await?;
    let stored = registry::items(&mut *tx, slug).await?;
    // An app resource that could not be read this time (or is not fetched, without `apps`)
    // keeps its stored copy: a failed read is a problem, not a removal.
    for old in stored.iter().filter(|i| i.kind == ItemKind::AppResource) {
        let still_declared = !server.approves(Capability::Apps)
            || problems
                .iter()
                .any(|p| p.item == format!("resource {}", old.key));
        if still_declared && !items.iter().any(|i| i.kind == old.kind && i.key == old.key) {
            items.push(old.clone());
        }
    }
    let found = changes::changes(&stored, &items);
    registry::replace_items(&mut tx, slug, &items).await?;
    let problem_json = serde_json::to_value(&problems).unwrap_or(Value::Null);
    registry::record_discovery(&mut *tx, slug, None, &problem_json).await?;
    for change in &found {
        let event = AuditEvent::AppChange(change.clone());
        writer::append(&mut tx, actor, &event, Some(slug)).await?;
    }
    // A read-only mark holds for the definition it was made on (SPEC §5).
    crate::entitlements::ssr::marks::clear_stale(&mut tx, slug).await?;
    tx.commit().await?;

    for change in &found {
        // Loud on purpose: after an edit this is the system working; unexpected, it is
        // worth investigating (SPEC §4).
        tracing::warn!(
            server.slug = %slug,
            item.kind = change.item_kind.as_str(),
            item.name = %change.item,
            change = ?change.change,
            digest.old = change.old_digest.as_deref().unwrap_or("-"),
            digest.new = change.new_digest.as_deref().unwrap_or("-"),
            "app change: server {slug} {} {} {} -> {}",
            change.item_kind.as_str(),
            change.item,
            change.old_digest.as_deref().unwrap_or("-"),
            change.new_digest.as_deref().unwrap_or("-"),
        );
    }
    for problem in &problems {
        tracing::warn!(server.slug = %slug, item = %problem.item, problem = %problem.problem, "discovery problem");
    }
    Ok(Outcome {
        tools: items.iter().filter(|i| i.kind == ItemKind::Tool).count(),
        apps: items
            .iter()
            .filter(|i| i.kind == ItemKind::AppResource)
            .count(),
        changes: found,
        problems,
    })
}
