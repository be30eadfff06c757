//! Entitlement queries: a slug granted to a person (email) or to a whole email domain.

use sqlx::{FromRow, PgExecutor};
use time::OffsetDateTime;
use uuid::Uuid;

/// Who a grant is for. Both are stored lower-cased.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grantee {
    Person(String),
    Domain(String),
}

impl Grantee {
    pub fn describe(&self) -> String {
        match self {
            Grantee::Person(email) => email.clone(),
            Grantee::Domain(domain) => format!("everyone at {domain}"),
        }
    }
}

#[derive(Clone, Debug, FromRow)]
pub struct GrantRow {
    pub id: i64,
    pub slug: String,
    pub email: Option<String>,
    pub domain: Option<String>,
    pub granted_at: OffsetDateTime,
}

/// Grants a slug; granting one that exists changes nothing. Returns the new row, if any.
pub async fn grant(
    db: impl PgExecutor<'_>,
    slug: &str,
    grantee: &Grantee,
    by: Uuid,
) -> Result<Option<GrantRow>, sqlx::Error> {
    let (email, domain) = match grantee {
        Grantee::Person(email) => (Some(email.to_lowercase()), None),
        Grantee::Domain(domain) => (None, Some(domain.to_lowercase())),
    };
    sqlx::query_as!(
        GrantRow,
        "INSERT INTO entitlements (slug, email, domain, granted_by) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING
         RETURNING id, slug, email, domain, granted_at",
        slug,
        email,
        domain,
        by,
    )
    .fetch_optional(db)
    .await
}

/// Deletes a grant; returns it when it existed.
pub async fn revoke(db: impl PgExecutor<'_>, id: i64) -> Result<Option<GrantRow>, sqlx::Error> {
    sqlx::query_as!(
        GrantRow,
        "DELETE FROM entitlements WHERE id = $1 RETURNING id, slug, email, domain, granted_at",
        id,
    )
    .fetch_optional(db)
    .await
}

pub async fn list(db: impl PgExecutor<'_>) -> Result<Vec<GrantRow>, sqlx::Error> {
    sqlx::query_as!(
        GrantRow,
        "SELECT id, slug, email, domain, granted_at FROM entitlements
         ORDER BY slug, domain NULLS LAST, email",
    )
    .fetch_all(db)
    .await
}

/// What a grant to `email` is stored under: the address and its domain, lower-cased (the
/// domain empty when there is no `@`).
pub fn grantee_keys(email: &str) -> (String, String) {
    let email = email.to_lowercase();
    let domain = email
        .rsplit_once('@')
        .map(|(_, d)| d.to_owned())
        .unwrap_or_default();
    (email, domain)
}

/// Whether `email` may reach `slug`: a grant to the address or to its domain, on a server
/// that exists and is enabled.
pub async fn is_entitled(
    db: impl PgExecutor<'_>,
    email: &str,
    slug: &str,
) -> Result<bool, sqlx::Error> {
    let (email, domain) = grantee_keys(email);
    sqlx::query_scalar!(
        r#"SELECT EXISTS (
            SELECT 1 FROM entitlements e JOIN servers s ON s.slug = e.slug
            WHERE e.slug = $1 AND s.enabled AND (e.email = $2 OR e.domain = $3)) AS "entitled!""#,
        slug,
        email,
        domain,
    )
    .fetch_one(db)
    .await
}

/// The enabled servers granted to `email` (or its domain), among `only` when given, in slug
/// order: one statement.
pub async fn reachable_servers(
    db: impl PgExecutor<'_>,
    email: &str,
    only: Option<&[String]>,
) -> Result<Vec<crate::servers::ssr::registry::ServerRow>, sqlx::Error> {
    let (email, domain) = grantee_keys(email);
    sqlx::query_as!(
        crate::servers::ssr::registry::ServerRow,
        "SELECT slug, display_name, transport, url, command, source, capabilities, enabled,
            created_at, updated_at, last_discovery_at, last_discovery_error,
            last_discovery_problems, link_hosts
         FROM servers s
         WHERE s.enabled
           AND EXISTS (SELECT 1 FROM entitlements e
                       WHERE e.slug = s.slug AND (e.email = $1 OR e.domain = $2))
           AND ($3::text[] IS NULL OR s.slug = ANY($3))
         ORDER BY s.slug",
        email,
        domain,
        only,
    )
    .fetch_all(db)
    .await
}

/// The enabled servers `email` may reach, with display names, by slug.
pub async fn reachable(
    db: impl PgExecutor<'_>,
    email: &str,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    let (email, domain) = grantee_keys(email);
    let rows = sqlx::query!(
        "SELECT DISTINCT s.slug, s.display_name FROM entitlements e JOIN servers s ON s.slug = e.slug
         WHERE s.enabled AND (e.email = $1 OR e.domain = $2) ORDER BY s.slug",
        email,
        domain,
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(|r| (r.slug, r.display_name)).collect())
}
