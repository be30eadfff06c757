//! Servers declared in the configuration file, and the background discovery: at start-up,
//! on a server's list_changed notification, and every `discovery.interval`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use app::audit::ssr::writer::{self, Actor, AuditEvent};
use app::entitlements::policy::{Policy, WritingRule};
use app::entitlements::ssr::policies;
use app::servers::Capability;
use app::servers::ssr::child_environment::DeclaredEnv;
use app::servers::ssr::client::{Endpoint, Hub};
use app::servers::ssr::discover::discover;
use app::servers::ssr::form::audit_payload;
use app::servers::ssr::registry::{self, ServerSpec};
use sqlx::PgPool;
use tokio::sync::mpsc;

use crate::config::{DeclaredServer, DeclaredTransport};

/// Makes the registry match the file: declared servers are inserted or updated (audited as
/// changes by strad itself); config servers no longer declared are disabled, not deleted,
/// so their history stays.
pub async fn sync_declared(pool: &PgPool, declared: &[DeclaredServer]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let actor = Actor::system();
    for server in declared {
        let spec = ServerSpec {
            slug: server.slug.clone(),
            display_name: server.display_name.clone(),
            endpoint: match &server.transport {
                DeclaredTransport::Http { url } => Endpoint::Http { url: url.clone() },
                DeclaredTransport::Stdio { command } => Endpoint::Stdio {
                    command: command.clone(),
                },
            },
            from_config: true,
            capabilities: server
                .capabilities
                .iter()
                .filter_map(|c| Capability::parse(c))
                .collect(),
            enabled: server.enabled,
        };
        match registry::get_server(&mut *tx, &server.slug).await? {
            None => {
                let row = registry::insert_server(&mut *tx, &spec).await?;
                let event = AuditEvent::ServerRegistered {
                    server: audit_payload(&row),
                };
                writer::append(&mut tx, &actor, &event, Some(&row.slug)).await?;
            }
            Some(old) => {
                if !old.from_config() {
                    tracing::error!(server.slug = %old.slug, "a configured slug is taken by a server registered in the UI; the file's entry is ignored");
                    continue;
                }
                let old_payload = audit_payload(&old);
                let new = registry::update_server(&mut *tx, &spec)
                    .await?
                    .expect("the row exists");
                if audit_payload(&new) != old_payload {
                    let event = AuditEvent::ServerChanged {
                        old: old_payload,
                        new: audit_payload(&new),
                        reason: None,
                    };
                    writer::append(&mut tx, &actor, &event, Some(&new.slug)).await?;
                }
            }
        }
    }
    let declared_slugs: HashSet<&str> = declared.iter().map(|s| s.slug.as_str()).collect();
    for (row, _, _) in registry::list_servers(&mut *tx).await? {
        if row.from_config() && row.enabled && !declared_slugs.contains(row.slug.as_str()) {
            let old_payload = audit_payload(&row);
            let spec = ServerSpec {
                slug: row.slug.clone(),
                display_name: row.display_name.clone(),
                endpoint: row.endpoint().expect("a stored endpoint"),
                from_config: true,
                capabilities: row
                    .capabilities
                    .iter()
                    .filter_map(|c| Capability::parse(c))
                    .collect(),
                enabled: false,
            };
            let new = registry::update_server(&mut *tx, &spec)
                .await?
                .expect("the row exists");
            let event = AuditEvent::ServerChanged {
                old: old_payload,
                new: audit_payload(&new),
                reason: Some("no longer declared".into()),
            };
            writer::append(&mut tx, &actor, &event, Some(&new.slug)).await?;
        }
    }
    tx.commit().await
}

/// Adds the demo server to the declared ones, unless the file declares its slug (the file
/// wins) or strad cannot name its own executable. Returns whether it did.
pub fn declare_demo(declared: &mut Vec<DeclaredServer>) -> bool {
    if declared.iter().any(|server| server.slug == DEMO_SLUG) {
        return false;
    }
    match demo_server() {
        Some(demo) => {
            declared.push(demo);
            true
        }
        None => {
            tracing::warn!("strad cannot name its own executable; no demo server");
            false
        }
    }
}

/// The demo's writing tool asks the person before it runs from the app, rather than being
/// refused as every server's is by default: set once, when the demo has no policy yet, so
/// an admin's later choice stands. Audited as strad's own change.
pub async fn settle_demo_policy(pool: &PgPool) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    let policy = Policy {
        writing_from_apps: WritingRule::Ask,
        ..Policy::default()
    };
    if policies::set_if_none(&mut *tx, DEMO_SLUG, &policy).await? {
        let event = AuditEvent::PolicyChanged {
            old: Policy::default(),
            new: policy,
            reason: Some("the demo asks before it writes".into()),
        };
        writer::append(&mut tx, &Actor::system(), &event, Some(DEMO_SLUG)).await?;
    }
    tx.commit().await
}

/// The demo server (`strad demo-server`, this very binary on stdio) as local mode declares
/// it: approved for tools and apps. `None` when strad cannot name its own executable.
fn demo_server() -> Option<DeclaredServer> {
    let exe = std::env::current_exe().ok()?.to_str()?.to_owned();
    Some(DeclaredServer {
        slug: DEMO_SLUG.into(),
        display_name: "Demo: clock and notes".into(),
        transport: DeclaredTransport::Stdio {
            command: vec![exe, "demo-server".into()],
        },
        capabilities: vec!["tools".into(), "apps".into()],
        enabled: true,
        env: Vec::new(),
    })
}

/// The demo's slug; a server the file declares under it wins over the demo.
pub const DEMO_SLUG: &str = "demo";

/// The `env` of each declared stdio server, for the hub that starts them.
pub fn declared_env(declared: &[DeclaredServer]) -> DeclaredEnv {
    DeclaredEnv::new(
        declared
            .iter()
            .filter(|server| matches!(server.transport, DeclaredTransport::Stdio { .. }))
            .map(|server| {
                let env = server
                    .env
                    .iter()
                    .map(|(name, value)| (name.clone(), value.expose().to_owned()))
                    .collect();
                (server.slug.clone(), env)
            })
            .collect(),
    )
}

/// Runs discovery in the background until the process ends.
pub fn spawn_discovery(
    pool: PgPool,
    hub: Arc<Hub>,
    mut changed: mpsc::UnboundedReceiver<String>,
    interval: Option<Duration>,
) {
    tokio::spawn(async move {
        // Every instance discovers as it starts (its own connections, its first view);
        // afterwards one instance a round.
        discover_all(&pool, &hub).await;
        let period = interval.unwrap_or(Duration::from_secs(60));
        let mut tick = interval.map(|period| {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            tick
        });
        loop {
            tokio::select! {
                slug = changed.recv() => {
                    let Some(slug) = slug else { break };
                    // A burst of notifications is one discovery.
                    let mut slugs = HashSet::from([slug]);
                    while let Ok(more) = changed.try_recv() {
                        slugs.insert(more);
                    }
                    for slug in slugs {
                        tracing::info!(server.slug = %slug, "the server's list changed; discovering");
                        let _ = discover(&pool, &hub, &slug, &Actor::system()).await;
                    }
                }
                _ = async { tick.as_mut().expect("only polled with an interval").tick().await }, if tick.is_some() => {
                    discover_all_once(&pool, &hub, period).await;
                }
            }
        }
    });
}

/// Discovers every server, unless another instance on this database already did within
/// half a `period` (several instances share one schedule: one of them runs each round).
async fn discover_all_once(pool: &PgPool, hub: &Hub, period: Duration) {
    match claim_round(pool, "discovery", period / 2).await {
        Ok(true) => discover_all(pool, hub).await,
        Ok(false) => tracing::debug!("another instance ran discovery this round"),
        Err(err) => tracing::error!(error.message = %err, "could not claim the discovery round"),
    }
}

/// Claims this round of the periodic work `name`: `true` for exactly one instance among
/// those asking within `spacing` of each other.
pub async fn claim_round(
    pool: &PgPool,
    name: &str,
    spacing: Duration,
) -> Result<bool, sqlx::Error> {
    let claimed = sqlx::query_scalar!(
        "INSERT INTO periodic_runs (name, ran_at) VALUES ($1, now())
         ON CONFLICT (name) DO UPDATE SET ran_at = now()
         WHERE periodic_runs.ran_at < now() - make_interval(secs => $2)
         RETURNING name",
        name,
        spacing.as_secs_f64(),
    )
    .fetch_optional(pool)
    .await?;
    Ok(claimed.is_some())
}

async fn discover_all(pool: &PgPool, hub: &Hub) {
    match registry::enabled_slugs(pool).await {
        Ok(slugs) => {
            for slug in slugs {
                // Errors are recorded on the server's row and logged by discover.
                let _ = discover(pool, hub, &slug, &Actor::system()).await;
            }
        }
        Err(err) => tracing::error!(error.message = %err, "could not list servers for discovery"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[sqlx::test(migrations = "../migrations")]
    async fn one_instance_claims_each_round(pool: PgPool) {
        let spacing = Duration::from_secs(30);
        let asks = (0..4).map(|_| claim_round(&pool, "discovery", spacing));
        let claimed = futures::future::join_all(asks).await;
        assert_eq!(
            claimed.iter().filter(|c| matches!(c, Ok(true))).count(),
            1,
            "{claimed:?}"
        );
        sqlx::query("UPDATE periodic_runs SET ran_at = now() - interval '31 seconds'")
            .execute(&pool)
            .await
            .unwrap();
        assert!(
            claim_round(&pool, "discovery", spacing).await.unwrap(),
            "the next round"
        );
        assert!(!claim_round(&pool, "discovery", spacing).await.unwrap());
        assert!(
            claim_round(&pool, "other", spacing).await.unwrap(),
            "rounds are per name"
        );
    }
}
