//! The one authorization path for using a server: signed in → entitled → policy. Every
//! route and server function that uses a server goes through here.

use sqlx::PgPool;

use super::{marks, policies};
use crate::auth::ssr::context::RequestContext;
use crate::auth::ssr::session::SessionKind;
use crate::entitlements::policy::{Decision, Surface, ToolFacts, decide};
use crate::error::AppError;
use crate::servers::Capability;
use crate::servers::ssr::changes::ItemKind;
use crate::servers::ssr::discovery::{ToolInfo, Visibility};
use crate::servers::ssr::registry::{self, ServerRow};

/// The server, when `ctx` is entitled to it. A slug that does not exist answers exactly like
/// one that is not granted (403), so the answer says nothing about which slugs exist.
pub async fn entitled_server(
    pool: &PgPool,
    ctx: &RequestContext,
    slug: &str,
) -> Result<ServerRow, AppError> {
    // One round trip: the server, if it is enabled and granted to this person or their domain.
    let (email, domain) = super::grants::grantee_keys(&ctx.user.email);
    sqlx::query_as::<_, ServerRow>(&format!(
        "SELECT {} FROM servers WHERE slug = $1 AND enabled AND EXISTS (
            SELECT 1 FROM entitlements e WHERE e.slug = $1 AND (e.email = $2 OR e.domain = $3))",
        registry::SERVER_COLUMNS
    ))
    .bind(slug)
    .bind(&email)
    .bind(&domain)
    .fetch_optional(pool)
    .await?
    .ok_or(AppError::Forbidden)
}

/// The server, when the person `user_id` is entitled to it: `entitled_server` for a caller
/// whose person is not loaded yet, so both can be read at once.
pub async fn entitled_server_of(
    pool: &PgPool,
    user_id: uuid::Uuid,
    slug: &str,
) -> Result<ServerRow, AppError> {
    sqlx::query_as::<_, ServerRow>(&format!(
        "SELECT {} FROM servers
         WHERE slug = $1 AND enabled AND EXISTS (
            SELECT 1 FROM users u JOIN entitlements e ON e.slug = $1
            WHERE u.id = $2
              AND (e.email = lower(u.email)
                   OR e.domain = coalesce(substring(lower(u.email) FROM '@([^@]*)$'), '')))",
        registry::SERVER_COLUMNS
    ))
    .bind(slug)
    .bind(user_id)
    .fetch_optional(pool)
    .await?
    .ok_or(AppError::Forbidden)
}

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
    type Row = (
        Vec<String>,
        bool,
        Option<Vec<String>>,
        Option<Vec<String>>,
        Option<String>,
        Option<serde_json::Value>,
        bool,
    );
    let (capabilities, has_policy, playground, apps, writing, info, marked): Row = sqlx::query_as(
        "SELECT coalesce(s.capabilities, '{}'), p.slug IS NOT NULL, p.playground_tools,
                p.app_tools, p.writing_from_apps, i.info,
                EXISTS (SELECT 1 FROM read_only_marks m
                        WHERE m.slug = $1 AND m.tool = $2 AND m.digest = i.digest)
         FROM (SELECT 1) one
         LEFT JOIN servers s ON s.slug = $1
         LEFT JOIN tool_policies p ON p.slug = $1
         LEFT JOIN server_items i ON i.slug = $1 AND i.kind = 'tool' AND i.key = $2",
    )
    .bind(slug)
    .bind(tool)
    .fetch_one(pool)
    .await?;
    let policy = if has_policy {
        policies::from_row(playground, apps, writing.as_deref().unwrap_or_default())
    } else {
        Default::default()
    };
    let facts = info
        .and_then(|v| serde_json::from_value::<ToolInfo>(v).ok())
        .map(|info| facts_of(&info, marked));
    let approved: Vec<Capability> = capabilities
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
    let info: Option<serde_json::Value> = sqlx::query_scalar(
        "SELECT info FROM server_items WHERE slug = $1 AND kind = $2 AND key = $3",
    )
    .bind(slug)
    .bind(ItemKind::Tool.as_str())
    .bind(tool)
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
    use super::*;
    use crate::auth::ssr::users::{self, UserRow, VerifiedIdentity};
    use crate::entitlements::policy::{Policy, Refusal, ToolList, WritingRule};
    use crate::entitlements::ssr::grants::Grantee;
    use crate::entitlements::ssr::{grants, marks, policies};
    use serde_json::json;

    async fn person(pool: &PgPool, email: &str, kind: SessionKind) -> RequestContext {
        let identity = VerifiedIdentity {
            issuer: "https://issuer.test".into(),
            subject: email.into(),
            email: email.into(),
            display_name: None,
        };
        let user: UserRow = users::upsert_user(pool, &identity).await.unwrap();
        RequestContext {
            user,
            roles: vec![crate::auth::Role::Member],
            session_kind: kind,
        }
    }

    /// A server `slug`, approved for tools and apps, with the tools: `reader` (readOnlyHint), `writer`, `app-only`
    /// (visibility app, read-only), `model-only` (visibility model).
    async fn server(pool: &PgPool, slug: &str) {
        sqlx::query("INSERT INTO servers (slug, display_name, transport, url, source, capabilities) VALUES ($1, $1, 'http', 'http://127.0.0.1:9/mcp', 'ui', '{tools,apps}')")
            .bind(slug)
            .execute(pool)
            .await
            .unwrap();
        for (name, visibility, hint) in [
            ("reader", json!(["Model", "App"]), true),
            ("writer", json!(["Model", "App"]), false),
            ("app-only", json!(["App"]), true),
            ("model-only", json!(["Model"]), true),
        ] {
            let visibility: Vec<String> = visibility
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap().to_lowercase())
                .collect();
            let info = json!({"name": name, "description": null, "resource_uri": null, "visibility": visibility,
                "read_only_hint": hint, "annotations": null, "problem": null});
            sqlx::query("INSERT INTO server_items (slug, kind, key, digest, size, body, info) VALUES ($1, 'tool', $2, $3, 1, '', $4)")
                .bind(slug)
                .bind(name)
                .bind(format!("digest-of-{name}"))
                .bind(info)
                .execute(pool)
                .await
                .unwrap();
        }
    }

    async fn grant(pool: &PgPool, slug: &str, grantee: Grantee, by: &RequestContext) -> i64 {
        grants::grant(pool, slug, &grantee, by.user.id)
            .await
            .unwrap()
            .unwrap()
            .id
    }

    /// Whether `ctx` is entitled to `slug`, asked the three ways strad asks it (by the loaded
    /// person, by user id before the person is loaded, and as one of `/mcp`'s servers);
    /// they must agree.
    async fn entitled(pool: &PgPool, ctx: &RequestContext, slug: &str) -> bool {
        let loaded = entitled_server(pool, ctx, slug).await.is_ok();
        let by_id = entitled_server_of(pool, ctx.user.id, slug).await.is_ok();
        let listed = grants::reachable_servers(pool, &ctx.user.email, None)
            .await
            .unwrap()
            .iter()
            .any(|s| s.slug == slug);
        assert_eq!(by_id, loaded, "{}", ctx.user.email);
        assert_eq!(listed, loaded, "{}", ctx.user.email);
        loaded
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_person_grant_entitles_that_person_only(pool: PgPool) {
        server(&pool, "clock").await;
        let alice = person(&pool, "alice@example.com", SessionKind::Browser).await;
        let bob = person(&pool, "bob@example.com", SessionKind::Browser).await;
        grant(
            &pool,
            "clock",
            Grantee::Person("alice@example.com".into()),
            &alice,
        )
        .await;
        assert!(entitled(&pool, &alice, "clock").await);
        assert!(!entitled(&pool, &bob, "clock").await);
        assert_eq!(
            entitled_server(&pool, &bob, "clock").await.unwrap_err(),
            AppError::Forbidden
        );
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_domain_grant_entitles_everyone_in_that_domain_and_nobody_else(pool: PgPool) {
        server(&pool, "clock").await;
        let admin = person(&pool, "root@corp.test", SessionKind::Browser).await;
        grant(&pool, "clock", Grantee::Domain("corp.test".into()), &admin).await;
        for (email, ok) in [
            ("erin@corp.test", true),
            ("ERIN@Corp.Test", true),
            ("mallory@evilcorp.test", false),
            ("x@sub.corp.test", false),
            ("corp.test@other.test", false),
        ] {
            let ctx = person(&pool, email, SessionKind::Browser).await;
            assert_eq!(entitled(&pool, &ctx, "clock").await, ok, "{email}");
        }
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_revoked_grant_entitles_no_more(pool: PgPool) {
        server(&pool, "clock").await;
        let alice = person(&pool, "alice@example.com", SessionKind::Browser).await;
        let id = grant(
            &pool,
            "clock",
            Grantee::Person("alice@example.com".into()),
            &alice,
        )
        .await;
        assert!(entitled_server(&pool, &alice, "clock").await.is_ok());
        grants::revoke(&pool, id).await.unwrap();
        assert!(!entitled(&pool, &alice, "clock").await);
        assert_eq!(
            entitled_server(&pool, &alice, "clock").await.unwrap_err(),
            AppError::Forbidden
        );
        assert_eq!(
            tool_call(&pool, &alice, "clock", "reader", Surface::Playground)
                .await
                .unwrap_err(),
            AppError::Forbidden
        );
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_slug_that_does_not_exist_answers_exactly_like_one_not_granted(pool: PgPool) {
        server(&pool, "clock").await;
        let alice = person(&pool, "alice@example.com", SessionKind::Browser).await;
        let missing = entitled_server(&pool, &alice, "no-such-server")
            .await
            .unwrap_err();
        let not_granted = entitled_server(&pool, &alice, "clock").await.unwrap_err();
        assert_eq!(missing, not_granted);
        assert_eq!(missing, AppError::Forbidden);
        let missing = tool_call(&pool, &alice, "no-such-server", "reader", Surface::App)
            .await
            .unwrap_err();
        let not_granted = tool_call(&pool, &alice, "clock", "reader", Surface::App)
            .await
            .unwrap_err();
        assert_eq!(
            (missing.clone(), missing.status()),
            (not_granted.clone(), not_granted.status())
        );
    }

    #[sqlx::test(migrations = "../migrations")]
    async fn a_disabled_server_is_reached_by_nobody(pool: PgPool) {
        server(&pool, "clock").await;
        let alice = person(&pool, "alice@example.com", SessionKind::Browser).await;
        grant(
            &pool,
            "clock",
            Grantee::Person("alice@example.com".into()),
            &alice,
        )
        .await;
        sqlx::query("UPDATE servers SET enabled = false")
            .execute(&pool)
            .await
            .unwrap();
        assert_eq!(
            entitled_server(&pool, &alice, "clock").await.unwrap_err(),
            AppError::Forbidden
        );
    }

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
