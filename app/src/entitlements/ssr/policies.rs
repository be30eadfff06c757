//! Tool policy queries. A slug without a row has the default policy.

use sqlx::PgExecutor;

use crate::entitlements::policy::{Policy, ToolList, WritingRule};

pub async fn get(db: impl PgExecutor<'_>, slug: &str) -> Result<Policy, sqlx::Error> {
    let row = sqlx::query!(
        "SELECT playground_tools, app_tools, writing_from_apps FROM tool_policies WHERE slug = $1",
        slug,
    )
    .fetch_optional(db)
    .await?;
    Ok(match row {
        None => Policy::default(),
        Some(row) => from_row(row.playground_tools, row.app_tools, &row.writing_from_apps),
    })
}

/// A policy from its row's columns (a missing list is every tool).
pub fn from_row(
    playground: Option<Vec<String>>,
    apps: Option<Vec<String>>,
    writing: &str,
) -> Policy {
    Policy {
        playground: playground.map_or(ToolList::All, ToolList::Only),
        apps: apps.map_or(ToolList::All, ToolList::Only),
        // An unknown value in the table is read as the safe default.
        writing_from_apps: WritingRule::parse(writing).unwrap_or(WritingRule::Deny),
    }
}

/// A tool list as its column holds it: every tool is NULL.
fn stored(list: &ToolList) -> Option<&[String]> {
    match list {
        ToolList::All => None,
        ToolList::Only(names) => Some(names),
    }
}

pub async fn set(db: impl PgExecutor<'_>, slug: &str, policy: &Policy) -> Result<(), sqlx::Error> {
    sqlx::query!(
        "INSERT INTO tool_policies (slug, playground_tools, app_tools, writing_from_apps)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (slug) DO UPDATE SET playground_tools = EXCLUDED.playground_tools,
            app_tools = EXCLUDED.app_tools, writing_from_apps = EXCLUDED.writing_from_apps,
            updated_at = now()",
        slug,
        stored(&policy.playground),
        stored(&policy.apps),
        policy.writing_from_apps.as_str(),
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Stores `policy` for a slug that has none yet; returns whether it did. A policy already
/// set (by an admin, say) is left as it is.
pub async fn set_if_none(
    db: impl PgExecutor<'_>,
    slug: &str,
    policy: &Policy,
) -> Result<bool, sqlx::Error> {
    let inserted = sqlx::query!(
        "INSERT INTO tool_policies (slug, playground_tools, app_tools, writing_from_apps)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (slug) DO NOTHING",
        slug,
        stored(&policy.playground),
        stored(&policy.apps),
        policy.writing_from_apps.as_str(),
    )
    .execute(db)
    .await?;
    Ok(inserted.rows_affected() == 1)
}
