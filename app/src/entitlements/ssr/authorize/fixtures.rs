//! People, servers and grants for the authorization tests.

use serde_json::json;
use sqlx::PgPool;

use super::{entitled_server, entitled_server_of};
use crate::auth::ssr::context::RequestContext;
use crate::auth::ssr::session::SessionKind;
use crate::auth::ssr::users::{self, UserRow, VerifiedIdentity};
use crate::entitlements::ssr::grants::{self, Grantee};

pub async fn person(pool: &PgPool, email: &str, kind: SessionKind) -> RequestContext {
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
pub async fn server(pool: &PgPool, slug: &str) {
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

pub async fn grant(pool: &PgPool, slug: &str, grantee: Grantee, by: &RequestContext) -> i64 {
    grants::grant(pool, slug, &grantee, by.user.id)
        .await
        .unwrap()
        .unwrap()
        .id
}

/// Whether `ctx` is entitled to `slug`, asked the three ways strad asks it (by the loaded
/// person, by user id before the person is loaded, and as one of `/mcp`'s servers);
/// they must agree.
pub async fn entitled(pool: &PgPool, ctx: &RequestContext, slug: &str) -> bool {
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
