//! Granting a server to someone, with its audit row in the same transaction: the one way an
//! entitlement is made, whether an admin grants it or local mode entitles its own admin.

use sqlx::{Postgres, Transaction};
use uuid::Uuid;

use super::grants::{self, GrantRow, Grantee};
use crate::audit::ssr::writer::{self, Actor, AuditEvent};

/// Grants `slug` to `grantee` (made by the person `by`) and audits it as `actor`; `reason`,
/// when given, is kept in the row. A grant that exists changes nothing and writes nothing.
pub async fn grant(
    tx: &mut Transaction<'_, Postgres>,
    actor: &Actor,
    slug: &str,
    grantee: &Grantee,
    by: Uuid,
    reason: Option<&str>,
) -> Result<Option<GrantRow>, sqlx::Error> {
    let Some(row) = grants::grant(&mut **tx, slug, grantee, by).await? else {
        return Ok(None);
    };
    let event = AuditEvent::EntitlementGranted {
        grant_id: row.id,
        email: row.email.clone(),
        domain: row.domain.clone(),
        reason: reason.map(str::to_owned),
    };
    writer::append(tx, actor, &event, Some(slug)).await?;
    Ok(Some(row))
}
