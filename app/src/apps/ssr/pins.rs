//! Pins: the first open of an app pins the resource for that person; later opens serve the
//! pin, never a silently changed copy; a refresh re-pins on purpose. Every pin is audited.

use serde_json::Value;
use sqlx::{FromRow, PgPool};
use uuid::Uuid;

use crate::audit::ssr::event::Pin;
use crate::audit::ssr::writer::{self, Actor, AuditEvent};
use crate::metrics;
use crate::servers::ssr::canonical::sha256_hex;
use crate::servers::ssr::client::Hub;
use crate::servers::ssr::discovery;
use crate::servers::ssr::registry::ServerRow;

mod checked;

pub use checked::{Checked, get_checked};

#[derive(Clone, Debug, FromRow)]
pub struct PinRow {
    pub uri: String,
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub size: i64,
    pub meta_ui: Value,
    pub server_fingerprint: String,
    pub pinned_at: time::OffsetDateTime,
}

impl PinRow {
    /// The stored digest still matches the stored bytes.
    pub fn is_intact(&self) -> bool {
        sha256_hex(&self.bytes) == self.sha256 && self.size == self.bytes.len() as i64
    }

    pub fn resource_domains(&self) -> Vec<String> {
        resource_domains(&self.meta_ui)
    }

    /// What an open shows of the pin, and whether its bytes match its digest.
    pub fn facts(&self) -> PinFacts {
        PinFacts {
            sha256: self.sha256.clone(),
            size: self.size,
            meta_ui: self.meta_ui.clone(),
            server_fingerprint: self.server_fingerprint.clone(),
            intact: self.is_intact(),
        }
    }
}

/// The permissions a pin's `_meta.ui` asks for (`camera`, `clipboardWrite`, …), by name.
fn permissions(meta_ui: &Value) -> Vec<String> {
    meta_ui
        .get("permissions")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// `_meta.ui.csp.resourceDomains` of a pin's `_meta.ui`, as declared.
fn resource_domains(meta_ui: &Value) -> Vec<String> {
    discovery::string_list(meta_ui.get("csp").and_then(|c| c.get("resourceDomains")))
}

/// A pin as an open sees it: everything but its bytes, and whether they match its digest.
#[derive(Clone, Debug)]
pub struct PinFacts {
    pub sha256: String,
    pub size: i64,
    pub meta_ui: Value,
    pub server_fingerprint: String,
    /// The stored bytes match the stored digest and size (`PinRow::is_intact`).
    pub intact: bool,
}

impl PinFacts {
    pub fn resource_domains(&self) -> Vec<String> {
        resource_domains(&self.meta_ui)
    }

    pub fn permissions(&self) -> Vec<String> {
        permissions(&self.meta_ui)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error("the server could not be reached: {0}")]
    Unreachable(String),
    #[error("the app is not valid: {0}")]
    Invalid(String),
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

impl PinError {
    /// What the person is told when pinning `slug` failed: the app's own problem as it is,
    /// an unreachable server by reference only (`failure::upstream_failure`).
    pub fn for_person(&self, slug: &str, user: Uuid) -> String {
        match self {
            PinError::Unreachable(why) => {
                let reference =
                    crate::servers::ssr::failure::upstream_failure(slug, "pin", user, why);
                format!("The server could not be reached (reference {reference}).")
            }
            PinError::Invalid(why) => format!("The app is not valid: {why}"),
            PinError::Database(_) => "The app could not be pinned.".into(),
        }
    }
}

/// A pin's identity without its bytes: the digest, and the row's version (`xmin`, new on
/// every write to the row).
#[derive(Clone, Debug)]
pub struct PinHead {
    pub sha256: String,
    pub version: String,
}

pub async fn head(
    pool: &PgPool,
    user: Uuid,
    slug: &str,
    uri: &str,
) -> Result<Option<PinHead>, sqlx::Error> {
    sqlx::query_as!(
        PinHead,
        r#"SELECT sha256, xmin::text AS "version!" FROM pins
         WHERE user_id = $1 AND slug = $2 AND uri = $3"#,
        user,
        slug,
        uri,
    )
    .fetch_optional(pool)
    .await
}

/// The pin whole, with its row's version (`xmin`) as read with the bytes.
pub async fn get(
    pool: &PgPool,
    user: Uuid,
    slug: &str,
    uri: &str,
) -> Result<Option<(PinRow, String)>, sqlx::Error> {
    let row = sqlx::query!(
        r#"SELECT uri, bytes, sha256, size, meta_ui, server_fingerprint, pinned_at,
                xmin::text AS "version!"
         FROM pins WHERE user_id = $1 AND slug = $2 AND uri = $3"#,
        user,
        slug,
        uri,
    )
    .fetch_optional(pool)
    .await?;
    Ok(row.map(|row| {
        let pin = PinRow {
            uri: row.uri,
            bytes: row.bytes,
            sha256: row.sha256,
            size: row.size,
            meta_ui: row.meta_ui,
            server_fingerprint: row.server_fingerprint,
            pinned_at: row.pinned_at,
        };
        (pin, row.version)
    }))
}

/// Reads the resource from the server now, checks it exactly as discovery does, and pins it
/// (replacing an older pin). `audited` makes its audit event: `AuditEvent::AppPinned` or
/// `AuditEvent::AppRepinned`.
pub async fn pin(
    pool: &PgPool,
    hub: &Hub,
    server: &ServerRow,
    uri: &str,
    actor: &Actor,
    user: Uuid,
    audited: fn(Pin) -> AuditEvent,
) -> Result<PinRow, PinError> {
    let endpoint = server
        .endpoint()
        .ok_or_else(|| PinError::Unreachable("no endpoint".into()))?;
    let read = hub
        .read_resource(&server.slug, &endpoint, uri)
        .await
        .map_err(|e| PinError::Unreachable(e.to_string()))?;
    let app = discovery::app_resource(uri, None, &read, hub.settings().resource_limit)
        .map_err(PinError::Invalid)?;
    let mut tx = pool.begin().await?;
    let row = sqlx::query_as!(
        PinRow,
        "INSERT INTO pins (user_id, slug, uri, bytes, sha256, size, meta_ui, server_fingerprint)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (user_id, slug, uri) DO UPDATE SET bytes = EXCLUDED.bytes, sha256 = EXCLUDED.sha256,
            size = EXCLUDED.size, meta_ui = EXCLUDED.meta_ui, server_fingerprint = EXCLUDED.server_fingerprint,
            pinned_at = now()
         RETURNING uri, bytes, sha256, size, meta_ui, server_fingerprint, pinned_at",
        user,
        server.slug,
        uri,
        app.bytes,
        app.content_digest,
        app.bytes.len() as i64,
        app.meta_ui,
        app.digest,
    )
    .fetch_one(&mut *tx)
    .await?;
    let event = audited(Pin {
        uri: uri.to_owned(),
        sha256: row.sha256.clone(),
        size: row.size,
        server_fingerprint: row.server_fingerprint.clone(),
    });
    writer::append(&mut tx, actor, &event, Some(&server.slug)).await?;
    tx.commit().await?;
    metrics::pin(match event {
        AuditEvent::AppRepinned(_) => metrics::Pin::Refreshed,
        _ => metrics::Pin::Pinned,
    });
    Ok(row)
}

/// The fingerprint discovery last saw for this resource, to tell the person when the
/// server's copy differs from their pin.
pub async fn server_fingerprint(
    pool: &PgPool,
    slug: &str,
    uri: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT digest FROM server_items WHERE slug = $1 AND kind = 'app_resource' AND key = $2",
        slug,
        uri,
    )
    .fetch_optional(pool)
    .await
}

/// The app resource of `slug` to open: the one asked for (it must be one discovery found),
/// else the one its declaring tool names, else the server's first.
pub async fn chosen_uri(
    pool: &PgPool,
    slug: &str,
    asked: Option<&str>,
) -> Result<Option<String>, sqlx::Error> {
    let uris: Vec<(String, bool)> = sqlx::query!(
        r#"SELECT r.key, EXISTS (SELECT 1 FROM server_items t WHERE t.slug = r.slug AND t.kind = 'tool'
                                AND t.info->>'resource_uri' = r.key) AS "declared!"
         FROM server_items r WHERE r.slug = $1 AND r.kind = 'app_resource' ORDER BY r.key"#,
        slug,
    )
    .fetch_all(pool)
    .await?
    .into_iter()
    .map(|r| (r.key, r.declared))
    .collect();
    Ok(match asked {
        Some(asked) => uris
            .iter()
            .find(|(uri, _)| uri == asked)
            .map(|(uri, _)| uri.clone()),
        None => uris
            .iter()
            .find(|(_, declared)| *declared)
            .or(uris.first())
            .map(|(uri, _)| uri.clone()),
    })
}

/// The tool that declares `uri` (its opening call), if any; the first by name.
pub async fn declaring_tool(
    pool: &PgPool,
    slug: &str,
    uri: &str,
) -> Result<Option<String>, sqlx::Error> {
    sqlx::query_scalar!(
        "SELECT key FROM server_items WHERE slug = $1 AND kind = 'tool' AND info->>'resource_uri' = $2
         ORDER BY (info->'visibility') ? 'model' DESC, key LIMIT 1",
        slug,
        uri,
    )
    .fetch_optional(pool)
    .await
}

/// A person's pins (or the one of `only`), newest first, with whether each is intact and
/// whether the server's copy now differs. Intact is decided as an open decides it
/// (`get_checked`): a row version already found intact is not read again.
pub async fn summaries(
    pool: &PgPool,
    checked: &Checked,
    user: Uuid,
    only: Option<(&str, &str)>,
) -> Result<Vec<crate::playground::PinSummary>, sqlx::Error> {
    let rows = sqlx::query!(
        r#"SELECT p.slug, s.display_name, p.uri, p.sha256 AS digest, p.size, p.pinned_at,
                COALESCE(i.digest <> p.server_fingerprint, false) AS "differs!",
                p.xmin::text AS "version!", p.meta_ui
         FROM pins p
         JOIN servers s ON s.slug = p.slug
         LEFT JOIN server_items i ON i.slug = p.slug AND i.kind = 'app_resource' AND i.key = p.uri
         WHERE p.user_id = $1 AND ($2::text IS NULL OR (p.slug = $2 AND p.uri = $3))
         ORDER BY p.pinned_at DESC, p.slug, p.uri"#,
        user,
        only.map(|(slug, _)| slug),
        only.map(|(_, uri)| uri),
    )
    .fetch_all(pool)
    .await?;
    let mut summaries = Vec::with_capacity(rows.len());
    for row in rows {
        let intact = checked.holds(user, &row.slug, &row.uri, &row.version)
            || get_checked(pool, checked, user, &row.slug, &row.uri)
                .await?
                .is_some_and(|facts| facts.intact);
        let declared = resource_domains(&row.meta_ui);
        summaries.push(crate::playground::PinSummary {
            granted_domains: super::csp::resource_origins(&declared),
            declared_domains: declared,
            permissions: permissions(&row.meta_ui),
            slug: row.slug,
            display_name: row.display_name,
            uri: row.uri,
            digest: row.digest,
            size: row.size,
            pinned_at: row
                .pinned_at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            differs: row.differs,
            intact,
        });
    }
    Ok(summaries)
}
