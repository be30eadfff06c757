use leptos::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::AppError;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantView {
    pub id: i64,
    pub slug: String,
    /// An email, or a domain for a domain grant.
    pub grantee: String,
    pub domain: bool,
    pub granted_at: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReachableServer {
    pub slug: String,
    pub display_name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyTool {
    pub name: String,
    pub read_only_hint: bool,
    pub marked_read_only: bool,
    pub visibility: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyView {
    pub slug: String,
    /// `None`: every tool.
    pub playground_tools: Option<Vec<String>>,
    pub app_tools: Option<Vec<String>>,
    pub writing_from_apps: String,
    pub tools: Vec<PolicyTool>,
}

#[cfg(feature = "ssr")]
mod support {
    use crate::error::AppError;

    /// An email address or a bare domain, lower-cased.
    pub fn grantee(value: &str) -> Result<super::super::ssr::grants::Grantee, AppError> {
        use super::super::ssr::grants::Grantee;
        let value = value.trim().to_lowercase();
        // A domain grant needs two labels at least (never a bare `com`); an address may be
        // on a one-label host, like local mode's `admin@localhost`.
        let labels_ok = |d: &str, min: usize| {
            let labels: Vec<&str> = d.split('.').collect();
            labels.len() >= min
                && labels.iter().all(|l| {
                    !l.is_empty()
                        && l.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                })
        };
        match value.split_once('@') {
            Some((local, domain))
                if !local.is_empty()
                    && !local.contains(char::is_whitespace)
                    && labels_ok(domain, 1) =>
            {
                Ok(Grantee::Person(value.clone()))
            }
            None if labels_ok(&value, 2) => Ok(Grantee::Domain(value.clone())),
            _ => Err(AppError::Invalid {
                field: "email or domain".into(),
            }),
        }
    }

    /// A tool list typed by an admin: names separated by commas, spaces or new lines.
    pub fn tool_list(all: bool, names: &str) -> crate::entitlements::policy::ToolList {
        use crate::entitlements::policy::ToolList;
        if all {
            return ToolList::All;
        }
        let mut names: Vec<String> = names
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect();
        names.sort();
        names.dedup();
        ToolList::Only(names)
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::entitlements::policy::ToolList;
        use crate::entitlements::ssr::grants::Grantee;

        #[test]
        fn grantees_are_emails_or_domains() {
            assert_eq!(
                grantee(" Alice@Example.com ").unwrap(),
                Grantee::Person("alice@example.com".into())
            );
            assert_eq!(
                grantee("corp.test").unwrap(),
                Grantee::Domain("corp.test".into())
            );
            assert_eq!(
                grantee("admin@localhost").unwrap(),
                Grantee::Person("admin@localhost".into())
            );
            for bad in [
                "",
                "alice",
                "@corp.test",
                "a b@corp.test",
                "corp",
                "localhost",
                "alice@",
                "evil.test;drop",
            ] {
                assert!(grantee(bad).is_err(), "{bad}");
            }
        }

        #[test]
        fn tool_lists_are_split_sorted_and_deduplicated() {
            assert_eq!(
                tool_list(false, "b, a\na  b"),
                ToolList::Only(vec!["a".into(), "b".into()])
            );
            assert_eq!(tool_list(true, "ignored"), ToolList::All);
            assert_eq!(tool_list(false, ""), ToolList::Only(vec![]));
        }
    }
}

/// Grants a server to a person (an email) or a whole domain. Admins only; audited.
#[server(prefix = "/api", endpoint = "entitlements/grant")]
pub async fn grant_entitlement(slug: String, grantee: String) -> Result<(), AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::entitlements::ssr::entitle;
    use crate::error::Responder;
    use crate::servers::ssr::registry;
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Admin).await?;
    let grantee = support::grantee(&grantee).map_err(|e| responder.fail(e))?;
    let mut tx = state.pool.begin().await?;
    registry::get_server(&mut *tx, &slug)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    entitle::grant(&mut tx, &ctx.actor(), &slug, &grantee, ctx.user.id, None).await?;
    tx.commit().await?;
    Ok(())
}

/// Revokes a grant. Admins only; audited.
#[server(prefix = "/api", endpoint = "entitlements/revoke")]
pub async fn revoke_entitlement(id: i64) -> Result<(), AppError> {
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::entitlements::ssr::grants;
    use crate::error::Responder;
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Admin).await?;
    let mut tx = state.pool.begin().await?;
    let row = grants::revoke(&mut *tx, id)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    let event = AuditEvent::EntitlementRevoked {
        grant_id: row.id,
        email: row.email,
        domain: row.domain,
    };
    writer::append(&mut tx, &ctx.actor(), &event, Some(&row.slug)).await?;
    tx.commit().await?;
    Ok(())
}

/// Every grant, by server. Admins only.
#[server(prefix = "/api", endpoint = "entitlements/list", input = leptos::server_fn::codec::GetUrl)]
pub async fn list_entitlements() -> Result<Vec<GrantView>, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::servers::ssr::views::format_time;
    let state = crate::state::AppState::from_context()?;
    RequestContext::require_role(Role::Admin).await?;
    let rows = super::ssr::grants::list(&state.pool).await?;
    Ok(rows
        .into_iter()
        .map(|r| GrantView {
            id: r.id,
            slug: r.slug,
            domain: r.domain.is_some(),
            grantee: r.email.or(r.domain).unwrap_or_default(),
            granted_at: format_time(r.granted_at),
        })
        .collect())
}

/// The servers a person (by email) can reach. Admins only.
#[server(prefix = "/api", endpoint = "entitlements/reachable", input = leptos::server_fn::codec::GetUrl)]
pub async fn reachable_by(email: String) -> Result<Vec<ReachableServer>, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    let state = crate::state::AppState::from_context()?;
    RequestContext::require_role(Role::Admin).await?;
    let rows = super::ssr::grants::reachable(&state.pool, email.trim()).await?;
    Ok(rows
        .into_iter()
        .map(|(slug, display_name)| ReachableServer { slug, display_name })
        .collect())
}

/// The servers the signed-in person can reach.
#[server(prefix = "/api", endpoint = "entitlements/mine", input = leptos::server_fn::codec::GetUrl)]
pub async fn my_servers() -> Result<Vec<ReachableServer>, AppError> {
    use crate::auth::ssr::context::RequestContext;
    let state = crate::state::AppState::from_context()?;
    let ctx = RequestContext::require().await?;
    let rows = super::ssr::grants::reachable(&state.pool, &ctx.user.email).await?;
    Ok(rows
        .into_iter()
        .map(|(slug, display_name)| ReachableServer { slug, display_name })
        .collect())
}

/// A server's tool policy with its tools and marks. Admins only.
#[server(prefix = "/api", endpoint = "policy/get", input = leptos::server_fn::codec::GetUrl)]
pub async fn get_policy(slug: String) -> Result<PolicyView, AppError> {
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::entitlements::policy::ToolList;
    use crate::entitlements::ssr::{marks, policies};
    use crate::error::Responder;
    use crate::servers::ssr::{discovery::ToolInfo, registry};
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    RequestContext::require_role(Role::Admin).await?;
    registry::get_server(&state.pool, &slug)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    let policy = policies::get(&state.pool, &slug).await?;
    let marked = marks::marked(&state.pool, &slug).await?;
    let items = registry::items(&state.pool, &slug).await?;
    let tools = items
        .iter()
        .filter(|i| i.kind == crate::servers::ssr::changes::ItemKind::Tool)
        .filter_map(|i| serde_json::from_value::<ToolInfo>(i.info.clone()).ok())
        .map(|t| PolicyTool {
            marked_read_only: marked.contains(&t.name),
            read_only_hint: t.read_only_hint,
            visibility: t
                .visibility
                .iter()
                .map(|v| format!("{v:?}").to_lowercase())
                .collect(),
            name: t.name,
        })
        .collect();
    let list = |l: ToolList| match l {
        ToolList::All => None,
        ToolList::Only(names) => Some(names),
    };
    Ok(PolicyView {
        slug,
        playground_tools: list(policy.playground),
        app_tools: list(policy.apps),
        writing_from_apps: policy.writing_from_apps.as_str().to_owned(),
        tools,
    })
}

/// Sets a server's tool policy. Admins only; audited with old and new.
#[server(prefix = "/api", endpoint = "policy/set")]
pub async fn set_policy(
    slug: String,
    playground_all: Option<String>,
    playground_tools: String,
    apps_all: Option<String>,
    app_tools: String,
    writing_from_apps: String,
) -> Result<(), AppError> {
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::entitlements::policy::{Policy, WritingRule};
    use crate::entitlements::ssr::policies;
    use crate::error::Responder;
    use crate::servers::ssr::registry;
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Admin).await?;
    let writing = WritingRule::parse(&writing_from_apps).ok_or_else(|| {
        responder.fail(AppError::Invalid {
            field: "writing_from_apps".into(),
        })
    })?;
    let new = Policy {
        playground: support::tool_list(playground_all.is_some(), &playground_tools),
        apps: support::tool_list(apps_all.is_some(), &app_tools),
        writing_from_apps: writing,
    };
    let mut tx = state.pool.begin().await?;
    registry::get_server(&mut *tx, &slug)
        .await?
        .ok_or_else(|| responder.fail(AppError::NotFound))?;
    let old = policies::get(&mut *tx, &slug).await?;
    policies::set(&mut *tx, &slug, &new).await?;
    let event = AuditEvent::PolicyChanged {
        old,
        new,
        reason: None,
    };
    writer::append(&mut tx, &ctx.actor(), &event, Some(&slug)).await?;
    tx.commit().await?;
    leptos_axum::redirect(&format!("/admin/servers/{slug}/policy"));
    Ok(())
}

/// Marks a tool read-only at its current definition, or removes the mark. Admins only;
/// audited.
#[server(prefix = "/api", endpoint = "policy/mark")]
pub async fn mark_read_only(slug: String, tool: String, read_only: bool) -> Result<(), AppError> {
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::entitlements::ssr::marks;
    use crate::error::Responder;
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Admin).await?;
    let mut tx = state.pool.begin().await?;
    let digest = sqlx::query_scalar!(
        "SELECT digest FROM server_items WHERE slug = $1 AND kind = 'tool' AND key = $2",
        slug,
        tool,
    )
    .fetch_optional(&mut *tx)
    .await?;
    let digest = digest.ok_or_else(|| responder.fail(AppError::NotFound))?;
    let event = if read_only {
        marks::mark(&mut *tx, &slug, &tool, &digest, ctx.user.id).await?;
        AuditEvent::ReadOnlyMarked { tool, digest }
    } else {
        if !marks::unmark(&mut *tx, &slug, &tool).await? {
            return Ok(());
        }
        AuditEvent::ReadOnlyUnmarked { tool, digest }
    };
    writer::append(&mut tx, &ctx.actor(), &event, Some(&slug)).await?;
    tx.commit().await?;
    leptos_axum::redirect(&format!("/admin/servers/{slug}/policy"));
    Ok(())
}

/// Grants or revokes a role. Admins only; audited. An admin cannot remove their own admin
/// role (someone must be left to change roles).
#[server(prefix = "/api", endpoint = "roles/set")]
pub async fn set_role(email: String, role: String, granted: bool) -> Result<(), AppError> {
    use crate::audit::ssr::writer::{self, AuditEvent};
    use crate::auth::Role;
    use crate::auth::ssr::context::RequestContext;
    use crate::auth::ssr::users;
    use crate::error::Responder;
    let state = crate::state::AppState::from_context()?;
    let responder = Responder::capture();
    let ctx = RequestContext::require_writer(Role::Admin).await?;
    let role = Role::parse(&role).ok_or_else(|| {
        responder.fail(AppError::Invalid {
            field: "role".into(),
        })
    })?;
    let mut tx = state.pool.begin().await?;
    let user_id = sqlx::query_scalar!(
        "SELECT id FROM users WHERE lower(email) = lower($1) ORDER BY created_at LIMIT 1",
        email.trim(),
    )
    .fetch_optional(&mut *tx)
    .await?;
    let user_id = user_id.ok_or_else(|| responder.fail(AppError::NotFound))?;
    if user_id == ctx.user.id && role == Role::Admin && !granted {
        return Err(responder.fail(AppError::Invalid {
            field: "role (you cannot remove your own admin role)".into(),
        }));
    }
    let changed = if granted {
        users::grant_role(&mut *tx, user_id, role).await?
    } else {
        users::revoke_role(&mut *tx, user_id, role).await?
    };
    if changed {
        let email = email.trim().to_lowercase();
        let event = if granted {
            AuditEvent::RoleGranted {
                email,
                role,
                reason: None,
            }
        } else {
            AuditEvent::RoleRevoked { email, role }
        };
        writer::append(&mut tx, &ctx.actor(), &event, None).await?;
    }
    tx.commit().await?;
    Ok(())
}
