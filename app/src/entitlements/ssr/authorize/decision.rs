//! The policy decision for one tool call, after entitlement: the server's approved
//! capabilities, the slug's tool policy, and what discovery and the admin's marks say of the
//! tool, weighed by `decide()`.

use sqlx::PgPool;

use super::entitled_server;
use crate::auth::ssr::context::RequestContext;
use crate::auth::ssr::session::SessionKind;
use crate::entitlements::policy::{Decision, Surface, ToolFacts, decide};
use crate::entitlements::ssr::{marks, policies};
use crate::error::AppError;
use crate::servers::Capability;
use crate::servers::ssr::changes::ItemKind;
use crate::servers::ssr::discovery::{ToolInfo, Visibility};

/// The decision for calling `tool` of `slug` from `surface`, after the entitlement check.
pub async fn tool_call(
    pool: &PgPool,
    ctx: &RequestContext,
    slug: &str,
    tool: &str,
    surface: Surface,
) -> Result<Decision, AppError> {
    let server = entitled_server(pool, ctx, slug).await?;
    decision(pool, ctx, &server.slug, tool, surface).await
}

/// The policy decision for `tool` of `slug`. It says nothing about entitlement: callers
/// check that with `entitled_server` (before, or at the same time) and use the decision
/// only when it holds.
pub async fn decision(
    pool: &PgPool,
    ctx: &RequestContext,
    slug: &str,
    tool: &str,
    surface: Surface,
) -> Result<Decision, AppError> {
    decision_for(pool, ctx.session_kind, slug, tool, surface).await
}

/// `decision` for a session of `kind`, before its person is loaded.
pub async fn decision_for(
    pool: &PgPool,
    kind: SessionKind,
    slug: &str,
    tool: &str,
    surface: Surface,
) -> Result<Decision, AppError> {
    // One round trip: the server's approved capabilities, the policy row (if any), the tool
    // as discovery stored it, and whether an admin marked it read-only at its current
    // fingerprint.
    let row = sqlx::query!(
        r#"SELECT coalesce(s.capabilities, '{}') AS "capabilities!",
                p.slug IS NOT NULL AS "has_policy!", p.playground_tools, p.app_tools,
                p.writing_from_apps AS "writing?", i.info AS "info?",
                EXISTS (SELECT 1 FROM read_only_marks m
                        WHERE m.slug = $1 AND m.tool = $2 AND m.digest = i.digest) AS "marked!"
         FROM (SELECT 1) one
         LEFT JOIN servers s ON s.slug = $1
         LEFT JOIN tool_policies p ON p.slug = $1
         LEFT JOIN server_items i ON i.slug = $1 AND i.kind = 'tool' AND i.key = $2"#,
        slug,
        tool,
    )
    .fetch_one(pool)
    .await?;
    let policy = if row.has_policy {
        policies::from_row(
            row.playground_tools,
            row.app_tools,
            row.writing.as_deref().unwrap_or_default(),
        )
    } else {
        Default::default()
    };
    let facts = row
        .info
        .and_then(|v| serde_json::from_value::<ToolInfo>(v).ok())
        .map(|info| facts_of(&info, row.marked));
    let approved: Vec<Capability> = row
        .capabilities
        .iter()
        .filter_map(|c| Capability::parse(c))
        .collect();
    Ok(decide(
        kind == SessionKind::Token,
        surface,
        &approved,
        &policy,
        tool,
        facts.as_ref(),
    ))
}

fn facts_of(info: &ToolInfo, marked: bool) -> ToolFacts {
    ToolFacts {
        visible_to_model: info.visibility.contains(&Visibility::Model),
        visible_to_app: info.visibility.contains(&Visibility::App),
        read_only_hint: info.read_only_hint,
        marked_read_only: marked,
    }
}

/// What discovery and the admin's marks say of one tool; `None` when the server did not list it.
pub async fn tool_facts(
    pool: &PgPool,
    slug: &str,
    tool: &str,
) -> Result<Option<ToolFacts>, AppError> {
    let info = sqlx::query_scalar!(
        "SELECT info FROM server_items WHERE slug = $1 AND kind = $2 AND key = $3",
        slug,
        ItemKind::Tool.as_str(),
        tool,
    )
    .fetch_optional(pool)
    .await?;
    let Some(info) = info.and_then(|v| serde_json::from_value::<ToolInfo>(v).ok()) else {
        return Ok(None);
    };
    let marked = marks::marked(pool, slug).await?.iter().any(|t| t == tool);
    Ok(Some(facts_of(&info, marked)))
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{grant, person, server};
    use super::*;
    use crate::entitlements::policy::{Policy, Refusal, ToolList, WritingRule};
    use crate::entitlements::ssr::grants::Grantee;

    #[sqlx::test(migrations = "../migrations")]
    async fn a_token_session_may_not_call_tools_from_the_playground_or_an_app(pool: PgPool) {
        server(&pool, "clock").await;
        let viewer = person(&pool, "alice@example.com", SessionKind::Token).await;
        grant(
            &pool,
            "clock",
            Grantee::Person("alice@example.com".into()),
            &viewer,
        )
        .await;
        assert!(
            entitled_server(&pool, &viewer, "clock").await.is_ok(),
            "it may view"
        );
        for surface in [Surface::Playground, Surface::App] {
            assert_eq!(
                tool_call(&pool, &viewer, "clock", "reader", surface)
                    .await
                    .unwrap(),
                Decision::Refuse(Refusal::TokenSession)
            );
        }
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_server_not_approved_for_tools_or_apps_has_nothing_callable(pool: PgPool) {
        server(&pool, "clock").await;
        let alice = person(&pool, "alice@example.com", SessionKind::Browser).await;
        grant(
            &pool,
            "clock",
            Grantee::Person("alice@example.com".into()),
            &alice,
        )
        .await;
        let approve = |capabilities: &'static [&'static str]| {
            sqlx::query("UPDATE servers SET capabilities = $1 WHERE slug = 'clock'")
                .bind(capabilities)
                .execute(&pool)
        };
        let refused = Decision::Refuse(Refusal::NotApproved);
        approve(&["apps", "resources"]).await.unwrap();
        for surface in [
            Surface::Playground,
            Surface::App,
            Surface::McpClient,
            Surface::Host,
        ] {
            assert_eq!(
                tool_call(&pool, &alice, "clock", "reader", surface)
                    .await
                    .unwrap(),
                refused,
                "{surface:?}"
            );
        }
        approve(&["tools"]).await.unwrap();
        for (surface, expected) in [
            (Surface::Playground, Decision::Run),
            (Surface::McpClient, Decision::Run),
            (Surface::App, refused),
            (Surface::Host, refused),
        ] {
            assert_eq!(
                tool_call(&pool, &alice, "clock", "reader", surface)
                    .await
                    .unwrap(),
                expected,
                "{surface:?}"
            );
        }
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn every_decision_under_the_default_policy(pool: PgPool) {
        server(&pool, "clock").await;
        let alice = person(&pool, "alice@example.com", SessionKind::Browser).await;
        grant(
            &pool,
            "clock",
            Grantee::Person("alice@example.com".into()),
            &alice,
        )
        .await;
        let cases = [
            ("reader", Surface::Playground, Decision::Run),
            ("reader", Surface::App, Decision::Run),
            ("writer", Surface::Playground, Decision::Run),
            (
                "writer",
                Surface::App,
                Decision::Refuse(Refusal::WritingDenied),
            ),
            ("app-only", Surface::App, Decision::Run),
            (
                "app-only",
                Surface::Playground,
                Decision::Refuse(Refusal::NotVisible),
            ),
            (
                "app-only",
                Surface::McpClient,
                Decision::Refuse(Refusal::NotVisible),
            ),
            (
                "model-only",
                Surface::App,
                Decision::Refuse(Refusal::NotVisible),
            ),
            ("model-only", Surface::McpClient, Decision::Run),
            (
                "missing",
                Surface::Playground,
                Decision::Refuse(Refusal::UnknownTool),
            ),
        ];
        for (tool, surface, expected) in cases {
            assert_eq!(
                tool_call(&pool, &alice, "clock", tool, surface)
                    .await
                    .unwrap(),
                expected,
                "{tool} from {surface:?}"
            );
        }
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn the_policy_lists_and_the_ask_rule_apply(pool: PgPool) {
        server(&pool, "clock").await;
        let alice = person(&pool, "alice@example.com", SessionKind::Browser).await;
        grant(
            &pool,
            "clock",
            Grantee::Person("alice@example.com".into()),
            &alice,
        )
        .await;
        let policy = Policy {
            playground: ToolList::Only(vec!["reader".into()]),
            apps: ToolList::Only(vec!["writer".into(), "reader".into()]),
            writing_from_apps: WritingRule::Ask,
        };
        policies::set(&pool, "clock", &policy).await.unwrap();
        assert_eq!(policies::get(&pool, "clock").await.unwrap(), policy);
        assert_eq!(
            tool_call(&pool, &alice, "clock", "reader", Surface::Playground)
                .await
                .unwrap(),
            Decision::Run
        );
        assert_eq!(
            tool_call(&pool, &alice, "clock", "writer", Surface::Playground)
                .await
                .unwrap(),
            Decision::Refuse(Refusal::NotInPolicy)
        );
        assert_eq!(
            tool_call(&pool, &alice, "clock", "writer", Surface::App)
                .await
                .unwrap(),
            Decision::Ask
        );
        assert_eq!(
            tool_call(&pool, &alice, "clock", "app-only", Surface::App)
                .await
                .unwrap(),
            Decision::Refuse(Refusal::NotInPolicy)
        );
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn an_admins_mark_makes_a_tool_read_only_until_its_definition_changes(pool: PgPool) {
        server(&pool, "clock").await;
        let alice = person(&pool, "alice@example.com", SessionKind::Browser).await;
        grant(
            &pool,
            "clock",
            Grantee::Person("alice@example.com".into()),
            &alice,
        )
        .await;
        marks::mark(&pool, "clock", "writer", "digest-of-writer", alice.user.id)
            .await
            .unwrap();
        assert_eq!(
            tool_call(&pool, &alice, "clock", "writer", Surface::App)
                .await
                .unwrap(),
            Decision::Run
        );

        // The server changes the tool: the mark no longer holds, even before it is cleared.
        sqlx::query("UPDATE server_items SET digest = 'a-new-digest' WHERE key = 'writer'")
            .execute(&pool)
            .await
            .unwrap();
        assert_eq!(
            tool_call(&pool, &alice, "clock", "writer", Surface::App)
                .await
                .unwrap(),
            Decision::Refuse(Refusal::WritingDenied)
        );
        let mut tx = pool.begin().await.unwrap();
        assert_eq!(
            marks::clear_stale(&mut tx, "clock").await.unwrap(),
            ["writer"]
        );
        tx.commit().await.unwrap();
        let (kind, payload): (String, serde_json::Value) =
            sqlx::query_as("SELECT kind, payload FROM audit_log ORDER BY id DESC LIMIT 1")
                .fetch_one(&pool)
                .await
                .unwrap();
        assert_eq!(kind, "read_only_mark_cleared");
        assert_eq!(payload["tool"], "writer");
        assert!(marks::marked(&pool, "clock").await.unwrap().is_empty());
    }
}
