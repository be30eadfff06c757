//! Entitlement: whether a person may use a server at all (a grant to them or their domain,
//! on a server that is enabled).

use sqlx::PgPool;

use crate::auth::ssr::context::RequestContext;
use crate::error::AppError;
use crate::servers::ssr::registry::ServerRow;

/// The server, when `ctx` is entitled to it. A slug that does not exist answers exactly like
/// one that is not granted (403), so the answer says nothing about which slugs exist.
pub async fn entitled_server(
    pool: &PgPool,
    ctx: &RequestContext,
    slug: &str,
) -> Result<ServerRow, AppError> {
    // One round trip: the server, if it is enabled and granted to this person or their domain.
    let (email, domain) = crate::entitlements::ssr::grants::grantee_keys(&ctx.user.email);
    sqlx::query_as!(
        ServerRow,
        "SELECT slug, display_name, transport, url, command, source, capabilities, enabled,
            created_at, updated_at, last_discovery_at, last_discovery_error,
            last_discovery_problems, link_hosts
         FROM servers WHERE slug = $1 AND enabled AND EXISTS (
            SELECT 1 FROM entitlements e WHERE e.slug = $1 AND (e.email = $2 OR e.domain = $3))",
        slug,
        email,
        domain,
    )
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
    sqlx::query_as!(
        ServerRow,
        "SELECT slug, display_name, transport, url, command, source, capabilities, enabled,
            created_at, updated_at, last_discovery_at, last_discovery_error,
            last_discovery_problems, link_hosts
         FROM servers
         WHERE slug = $1 AND enabled AND EXISTS (
            SELECT 1 FROM users u JOIN entitlements e ON e.slug = $1
            WHERE u.id = $2
              AND (e.email = lower(u.email)
                   OR e.domain = coalesce(substring(lower(u.email) FROM '@([^@]*)$'), '')))",
        slug,
        user_id,
    )
    .fetch_optional(pool)
    .await?
    .ok_or(AppError::Forbidden)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{entitled, grant, person, server};
    use super::super::tool_call;
    use super::*;
    use crate::auth::ssr::session::SessionKind;
    use crate::entitlements::policy::Surface;
    use crate::entitlements::ssr::grants::{self, Grantee};

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
}
