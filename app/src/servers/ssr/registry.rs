//! Server registry queries. Each takes an executor or connection so callers compose them
//! inside one transaction with their audit row.

use serde_json::Value;
use sqlx::{FromRow, PgConnection, PgExecutor};
use time::OffsetDateTime;

use super::changes::{Item, ItemKind};
use super::client::Endpoint;
use crate::servers::Capability;

#[derive(Clone, Debug, FromRow)]
pub struct ServerRow {
    pub slug: String,
    pub display_name: String,
    pub transport: String,
    pub url: Option<String>,
    pub command: Option<Vec<String>>,
    pub source: String,
    pub capabilities: Vec<String>,
    pub enabled: bool,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub last_discovery_at: Option<OffsetDateTime>,
    pub last_discovery_error: Option<String>,
    pub last_discovery_problems: Value,
    /// Hosts this server's app opens links to without asking (`link_hosts::parse_link_hosts`).
    pub link_hosts: Vec<String>,
}

impl ServerRow {
    pub fn endpoint(&self) -> Option<Endpoint> {
        match (self.transport.as_str(), &self.url, &self.command) {
            ("http", Some(url), _) => Some(Endpoint::Http { url: url.clone() }),
            ("stdio", _, Some(command)) => Some(Endpoint::Stdio {
                command: command.clone(),
            }),
            _ => None,
        }
    }

    pub fn approves(&self, capability: Capability) -> bool {
        self.capabilities.iter().any(|c| c == capability.as_str())
    }

    /// The capabilities an admin approved this server for: its authority ceiling.
    pub fn approved(&self) -> Vec<Capability> {
        Capability::ALL
            .into_iter()
            .filter(|c| self.approves(*c))
            .collect()
    }

    pub fn from_config(&self) -> bool {
        self.source == "config"
    }
}

/// A server to insert or update.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    pub slug: String,
    pub display_name: String,
    pub endpoint: Endpoint,
    pub from_config: bool,
    pub capabilities: Vec<Capability>,
    pub enabled: bool,
}

fn capability_names(capabilities: &[Capability]) -> Vec<String> {
    let mut names: Vec<String> = capabilities.iter().map(|c| c.as_str().to_owned()).collect();
    names.sort();
    names.dedup();
    names
}

fn endpoint_columns(endpoint: &Endpoint) -> (&'static str, Option<String>, Option<Vec<String>>) {
    match endpoint {
        Endpoint::Http { url } => ("http", Some(url.clone()), None),
        Endpoint::Stdio { command } => ("stdio", None, Some(command.clone())),
    }
}

/// Inserts a server; a taken slug is the `servers_pkey` violation.
pub async fn insert_server(
    db: impl PgExecutor<'_>,
    spec: &ServerSpec,
) -> Result<ServerRow, sqlx::Error> {
    let (transport, url, command) = endpoint_columns(&spec.endpoint);
    sqlx::query_as!(
        ServerRow,
        "INSERT INTO servers (slug, display_name, transport, url, command, source, capabilities, enabled)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         RETURNING slug, display_name, transport, url, command, source, capabilities, enabled,
            created_at, updated_at, last_discovery_at, last_discovery_error,
            last_discovery_problems, link_hosts",
        spec.slug,
        spec.display_name,
        transport,
        url,
        command.as_deref(),
        if spec.from_config { "config" } else { "ui" },
        &capability_names(&spec.capabilities),
        spec.enabled,
    )
    .fetch_one(db)
    .await
}

/// Updates everything but the slug and the source.
pub async fn update_server(
    db: impl PgExecutor<'_>,
    spec: &ServerSpec,
) -> Result<Option<ServerRow>, sqlx::Error> {
    let (transport, url, command) = endpoint_columns(&spec.endpoint);
    sqlx::query_as!(
        ServerRow,
        "UPDATE servers SET display_name = $2, transport = $3, url = $4, command = $5,
                capabilities = $6, enabled = $7, updated_at = now()
         WHERE slug = $1
         RETURNING slug, display_name, transport, url, command, source, capabilities, enabled,
            created_at, updated_at, last_discovery_at, last_discovery_error,
            last_discovery_problems, link_hosts",
        spec.slug,
        spec.display_name,
        transport,
        url,
        command.as_deref(),
        &capability_names(&spec.capabilities),
        spec.enabled,
    )
    .fetch_optional(db)
    .await
}

/// Replaces the open-link allow-list (already parsed).
pub async fn set_link_hosts(
    db: impl PgExecutor<'_>,
    slug: &str,
    hosts: &[String],
) -> Result<Option<ServerRow>, sqlx::Error> {
    sqlx::query_as!(
        ServerRow,
        "UPDATE servers SET link_hosts = $2, updated_at = now()
         WHERE slug = $1
         RETURNING slug, display_name, transport, url, command, source, capabilities, enabled,
            created_at, updated_at, last_discovery_at, last_discovery_error,
            last_discovery_problems, link_hosts",
        slug,
        hosts,
    )
    .fetch_optional(db)
    .await
}

pub async fn get_server(
    db: impl PgExecutor<'_>,
    slug: &str,
) -> Result<Option<ServerRow>, sqlx::Error> {
    sqlx::query_as!(
        ServerRow,
        "SELECT slug, display_name, transport, url, command, source, capabilities, enabled,
            created_at, updated_at, last_discovery_at, last_discovery_error,
            last_discovery_problems, link_hosts
         FROM servers WHERE slug = $1",
        slug,
    )
    .fetch_optional(db)
    .await
}

/// Every server with its count of tools and of app resources, by slug.
pub async fn list_servers(
    db: impl PgExecutor<'_>,
) -> Result<Vec<(ServerRow, i64, i64)>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT slug, display_name, transport, url, command, source, capabilities, enabled,
            created_at, updated_at, last_discovery_at, last_discovery_error,
            last_discovery_problems, link_hosts,
            (SELECT count(*) FROM server_items i WHERE i.slug = s.slug AND i.kind = 'tool') AS "tool_count!",
            (SELECT count(*) FROM server_items i WHERE i.slug = s.slug AND i.kind = 'app_resource') AS "app_count!"
         FROM servers s ORDER BY slug"#
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let server = ServerRow {
                slug: r.slug,
                display_name: r.display_name,
                transport: r.transport,
                url: r.url,
                command: r.command,
                source: r.source,
                capabilities: r.capabilities,
                enabled: r.enabled,
                created_at: r.created_at,
                updated_at: r.updated_at,
                last_discovery_at: r.last_discovery_at,
                last_discovery_error: r.last_discovery_error,
                last_discovery_problems: r.last_discovery_problems,
                link_hosts: r.link_hosts,
            };
            (server, r.tool_count, r.app_count)
        })
        .collect())
}

/// The items discovery stored last time.
pub async fn items(db: impl PgExecutor<'_>, slug: &str) -> Result<Vec<Item>, sqlx::Error> {
    let rows = sqlx::query!(
        "SELECT kind, key, digest, size, body, info FROM server_items WHERE slug = $1 ORDER BY kind, key",
        slug,
    )
    .fetch_all(db)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|r| {
            Some(Item {
                kind: ItemKind::parse(&r.kind)?,
                key: r.key,
                digest: r.digest,
                size: r.size,
                body: r.body,
                info: r.info,
            })
        })
        .collect())
}

/// Replaces the stored items with what discovery found now.
pub async fn replace_items(
    conn: &mut PgConnection,
    slug: &str,
    items: &[Item],
) -> Result<(), sqlx::Error> {
    sqlx::query!("DELETE FROM server_items WHERE slug = $1", slug)
        .execute(&mut *conn)
        .await?;
    for item in items {
        sqlx::query!(
            "INSERT INTO server_items (slug, kind, key, digest, size, body, info) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            slug,
            item.kind.as_str(),
            item.key,
            item.digest,
            item.size,
            item.body,
            item.info,
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Records how the last discovery went.
pub async fn record_discovery(
    db: impl PgExecutor<'_>,
    slug: &str,
    error: Option<&str>,
    problems: &Value,
) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "UPDATE servers SET last_discovery_at = now(), last_discovery_error = $2,
                last_discovery_problems = $3 WHERE slug = $1",
        slug,
        error,
        problems,
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Slugs of every enabled server, for periodic discovery.
pub async fn enabled_slugs(db: impl PgExecutor<'_>) -> Result<Vec<String>, sqlx::Error> {
    sqlx::query_scalar!("SELECT slug FROM servers WHERE enabled ORDER BY slug")
        .fetch_all(db)
        .await
}
