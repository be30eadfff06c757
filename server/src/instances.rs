//! The instances serving one database (SPEC §13). Each announces itself in `instances`
//! every `BEAT` and counts the others seen within `ALIVE`; the per-person rate limits divide
//! their budget by that count, so however many instances a load balancer spreads a person's
//! requests over, together they allow what a single instance would (a person whose requests
//! all reach one instance — one `/mcp` session — gets that instance's share).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sqlx::PgPool;
use uuid::Uuid;

/// How often an instance announces itself.
pub const BEAT: Duration = Duration::from_secs(5);
/// How recently an instance must have been seen to count.
pub const ALIVE: Duration = Duration::from_secs(15);

/// How many instances are live, as last counted (1 until the first count, and whenever the
/// database cannot be read: an instance alone must not refuse everything).
#[derive(Clone, Debug)]
pub struct Live(Arc<AtomicU32>);

impl Default for Live {
    fn default() -> Self {
        Self(Arc::new(AtomicU32::new(1)))
    }
}

impl Live {
    pub fn count(&self) -> u32 {
        self.0.load(Ordering::Relaxed).max(1)
    }

    fn set(&self, count: u32) {
        self.0.store(count.max(1), Ordering::Relaxed);
    }
}

/// Announces this instance as `id` (new at every start) now, then every `BEAT`, keeping
/// `live` counted until the process ends. The first announcement is made before this returns,
/// so other instances know this one before it issues anything they may be asked about.
pub async fn start_heartbeat(pool: PgPool, id: Uuid, name: Option<String>, live: Live) {
    announce(&pool, id, name.as_deref(), &live).await;
    tokio::spawn(async move {
        let mut every = tokio::time::interval_at(tokio::time::Instant::now() + BEAT, BEAT);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            announce(&pool, id, name.as_deref(), &live).await;
        }
    });
}

async fn announce(pool: &PgPool, id: Uuid, name: Option<&str>, live: &Live) {
    match beat(pool, id, name).await {
        Ok(count) => live.set(count),
        Err(error) => {
            tracing::warn!(error.message = %error, "could not announce this instance");
            live.set(1);
        }
    }
}

/// Marks `id` seen now; the live instances, this one included. Instances not seen for a
/// minute are forgotten.
pub async fn beat(pool: &PgPool, id: Uuid, name: Option<&str>) -> Result<u32, sqlx::Error> {
    let count = sqlx::query_scalar!(
        r#"WITH seen AS (
               INSERT INTO instances (id, name) VALUES ($1, $2)
               ON CONFLICT (id) DO UPDATE SET seen_at = now()
           ), gone AS (
               DELETE FROM instances WHERE seen_at < now() - interval '1 minute'
           )
           SELECT count(*) + 1 AS "count!" FROM instances
           WHERE id <> $1 AND seen_at > now() - make_interval(secs => $3)"#,
        id,
        name,
        ALIVE.as_secs_f64(),
    )
    .fetch_one(pool)
    .await?;
    Ok(u32::try_from(count).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[sqlx::test(migrations = "../migrations")]
    async fn each_instance_counts_the_live_ones(pool: PgPool) {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        assert_eq!(beat(&pool, a, Some("a")).await.unwrap(), 1);
        assert_eq!(beat(&pool, b, Some("b")).await.unwrap(), 2);
        assert_eq!(
            beat(&pool, a, Some("a")).await.unwrap(),
            2,
            "a beat again is one"
        );
        sqlx::query("UPDATE instances SET seen_at = now() - interval '20 seconds' WHERE id = $1")
            .bind(b)
            .execute(&pool)
            .await
            .unwrap();
        assert_eq!(beat(&pool, a, Some("a")).await.unwrap(), 1, "b stopped");
        let live = Live::default();
        live.set(0);
        assert_eq!(live.count(), 1);
    }
}
