//! Tool policy queries. A slug without a row has the default policy.

use sqlx::PgExecutor;

use crate::entitlements::policy::{Policy, ToolList, WritingRule};

/// A policy row: the playground's tools, the apps' tools (`None`: all) and the writing rule.
type PolicyRow = (Option<Vec<String>>, Option<Vec<String>>, String);

pub async fn get(db: impl PgExecutor<'_>, slug: &str) -> Result<Policy, sqlx::Error> {
    let row: Option<PolicyRow> = sqlx::query_as(
        "SELECT playground_tools, app_tools, writing_from_apps FROM tool_policies WHERE slug = $1",
    )
    .bind(slug)
    .fetch_optional(db)
    .await?;
    Ok(match row {
        None => Policy::default(),
        Some((playground, apps, writing)) => from_row(playground, apps, &writing),
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

pub async fn set(db: impl PgExecutor<'_>, slug: &str, policy: &Policy) -> Result<(), sqlx::Error> {
    let list = |list: &ToolList| match list {
        ToolList::All => None,
        ToolList::Only(names) => Some(names.clone()),
    };
    sqlx::query(
        "INSERT INTO tool_policies (slug, playground_tools, app_tools, writing_from_apps)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (slug) DO UPDATE SET playground_tools = EXCLUDED.playground_tools,
            app_tools = EXCLUDED.app_tools, writing_from_apps = EXCLUDED.writing_from_apps,
            updated_at = now()",
    )
    .bind(slug)
    .bind(list(&policy.playground))
    .bind(list(&policy.apps))
    .bind(policy.writing_from_apps.as_str())
    .execute(db)
    .await?;
    Ok(())
}
