//! Appending to the audit log. Every row's hash covers its own content and the previous
//! row's hash; writers take one transaction-scoped advisory lock so concurrent events line
//! up into a single chain. Callers pass their own transaction, so a change and its audit
//! row commit together or not at all.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::Value;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use uuid::Uuid;

pub use super::event::AuditEvent;

/// Advisory-lock key that serializes audit writers ("stradaud" in ASCII), taken by
/// `audit_chain_head` (migration 0015).
pub const AUDIT_LOCK: i64 = 0x7374_7261_6461_7564;
pub const GENESIS: [u8; 32] = [0; 32];

/// Who did it: a person, or strad itself (discovery, start-up).
#[derive(Clone, Debug, Default)]
pub struct Actor {
    pub id: Option<Uuid>,
    pub email: Option<String>,
}

impl Actor {
    pub fn system() -> Self {
        Self::default()
    }

    pub fn person(id: Uuid, email: &str) -> Self {
        Self {
            id: Some(id),
            email: Some(email.to_owned()),
        }
    }
}

/// The hash of one row. Each field is length-prefixed so no two rows can share an encoding.
#[allow(clippy::too_many_arguments)]
pub fn row_hash(
    prev: &[u8],
    at_micros: i64,
    actor_id: Option<Uuid>,
    actor_email: Option<&str>,
    kind: &str,
    slug: Option<&str>,
    payload_text: &str,
) -> [u8; 32] {
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_be_bytes());
        hasher.update(bytes);
    };
    field(prev);
    field(&at_micros.to_be_bytes());
    field(
        actor_id
            .map(|id| id.to_string())
            .unwrap_or_default()
            .as_bytes(),
    );
    field(actor_email.unwrap_or_default().as_bytes());
    field(kind.as_bytes());
    field(slug.unwrap_or_default().as_bytes());
    field(payload_text.as_bytes());
    hasher.finalize().into()
}

/// Appends one event inside the caller's transaction; returns its id. A transaction, not a
/// bare connection: the chain's advisory lock lasts until commit, so the change and its
/// audit row commit together and no other row can slip in between.
pub async fn append(
    tx: &mut Transaction<'_, Postgres>,
    actor: &Actor,
    event: &AuditEvent,
    slug: Option<&str>,
) -> Result<i64, sqlx::Error> {
    let connection: &mut PgConnection = tx;
    append_one(connection, actor, event, slug, None).await
}

/// Appends one event on its own: one statement, its own transaction, one round trip.
pub async fn append_alone(
    pool: &PgPool,
    actor: &Actor,
    event: &AuditEvent,
    slug: Option<&str>,
) -> Result<i64, sqlx::Error> {
    let mut connection = pool.acquire().await?;
    append_one(&mut connection, actor, event, slug, None).await
}

/// One event for `Appender`.
pub struct Event {
    pub actor: Actor,
    pub event: AuditEvent,
    pub slug: Option<String>,
}

struct Waiting {
    event: Event,
    appended: tokio::sync::oneshot::Sender<Result<i64, String>>,
}

/// Events appended on their own, from many callers at once: a caller waits until its row is
/// committed, as with `append_alone`, but rows that arrive while one batch is being written
/// go together in the next (`append_many`): one lock, one commit.
/// Busy routes (tool calls) use it; the chain's lock made their commits queue one by one.
/// A call marks itself `running` while it waits on its upstream, and the writer waits a
/// while (`Linger`) for the rows of running calls (group commit). One writer task, on a
/// connection of its own for as long as that connection works. Whether a caller also waits
/// for the disk is `Flush`.
#[derive(Clone)]
pub struct Appender {
    send: tokio::sync::mpsc::UnboundedSender<Waiting>,
    written: std::sync::Arc<Written>,
}

/// When the rows an `Appender` commits reach the disk. Either way a caller waits until its
/// row is committed: in the chain, visible to auditors, and safe from a crash of strad. The
/// choice is whether it also waits for PostgreSQL to flush the commit to disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Flush {
    /// PostgreSQL flushes the rows in the background (`synchronous_commit = off` for their
    /// transaction only), within three times `wal_writer_delay` (0.6 s by default). A crash
    /// of PostgreSQL or of its machine in that time loses the last rows, as a suffix: the
    /// chain stays whole and nothing else is lost or made inconsistent. A call then does not
    /// wait for the disk (1–4 ms on a small cloud disk).
    #[default]
    Background,
    /// The caller also waits for the flush, as the database is set to do (by default,
    /// `synchronous_commit = on`).
    BeforeAnswer,
}

/// How long the writer waits for the rows of calls still running before it commits what it
/// has: group commit, as PostgreSQL's own `commit_delay` does for concurrent transactions.
/// A caller alone never waits, and any wait ends as soon as the last running call's row is
/// in. Under load one commit then carries several rows: a commit costs PostgreSQL far more
/// CPU than a row (docs/benchmarks.md), and that CPU is taken from the upstream servers'
/// and strad's own.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Linger {
    /// Always this long (tests).
    Fixed(Duration),
    /// A quarter of the time calls take now (`FRACTION` of a moving average, from
    /// `Appender::running` to their row), between `LINGER` and `max`. A row thus waits
    /// for others at most a quarter of what calls now wait upstream themselves: when
    /// calls come back in a millisecond the wait stays at a millisecond, and when 32
    /// callers queue at a busy upstream for tens of milliseconds, their rows gather for up
    /// to `max` and one commit carries many.
    Paced { max: Duration },
}

/// The shortest wait for running calls' rows. Tokio's timer counts whole milliseconds, so a
/// wait of one is 1–2 ms.
pub const LINGER: Duration = Duration::from_millis(1);
/// The longest wait of `Linger::Paced` by default.
pub const LINGER_MAX: Duration = Duration::from_millis(10);
/// The share of the calls' own time that their rows may wait for each other.
const FRACTION: u32 = 4;

impl Linger {
    /// The wait for the rows of running calls, when calls take `calls` on average.
    pub fn wait(self, calls: Duration) -> Duration {
        match self {
            Linger::Fixed(wait) => wait,
            Linger::Paced { max } => (calls / FRACTION).clamp(LINGER, max.max(LINGER)),
        }
    }
}

/// What the writer has written so far (batches, that is commits, and rows), and the calls
/// running whose rows are still to come.
#[derive(Default)]
struct Written {
    batches: std::sync::atomic::AtomicU64,
    rows: std::sync::atomic::AtomicU64,
    running: std::sync::atomic::AtomicUsize,
    /// How long calls take, from `running` to their row: a moving average in microseconds,
    /// each call weighing an eighth.
    call_micros: std::sync::atomic::AtomicU64,
    /// Told when the last running call ends, so a waiting writer need not wait longer.
    none_running: tokio::sync::Notify,
}

/// A call on its way whose row will follow (`Appender::running`): while any is running, the
/// writer waits a while (`Linger`) for more rows before it commits. Dropped without a row (the
/// call refused, failed or cancelled), it stops counting all the same.
pub struct Running {
    appender: Appender,
    since: std::time::Instant,
}

impl Running {
    /// Appends this call's row, which ends its running, and returns its id once committed.
    pub async fn append(self, event: Event) -> Result<i64, sqlx::Error> {
        self.appender.written.took(self.since.elapsed());
        let committed = self.appender.queue(event);
        drop(self);
        committed?.await
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let written = &self.appender.written;
        if written.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            written.none_running.notify_one();
        }
    }
}

impl Written {
    /// Counts one call's time into the moving average.
    fn took(&self, call: Duration) {
        let call = u64::try_from(call.as_micros()).unwrap_or(u64::MAX);
        let _ = self
            .call_micros
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |average| {
                Some(average - average / 8 + call / 8)
            });
    }

    fn calls_take(&self) -> Duration {
        Duration::from_micros(self.call_micros.load(Ordering::Relaxed))
    }
}

/// Rows written in one statement at most.
const BATCH: usize = 256;

impl Appender {
    /// Starts the writer on `pool`, paced by the calls (`Linger::Paced`, up to
    /// `LINGER_MAX`), flushing as `flush` says; it stops when every `Appender` is dropped.
    pub fn spawn(pool: PgPool, flush: Flush) -> Self {
        Self::spawn_with(pool, Linger::Paced { max: LINGER_MAX }, flush)
    }

    /// Starts the writer on `pool`, waiting exactly `linger` for the rows of running calls.
    pub fn spawn_lingering(pool: PgPool, linger: Duration) -> Self {
        Self::spawn_with(pool, Linger::Fixed(linger), Flush::default())
    }

    /// Starts the writer on `pool`, waiting for the rows of running calls as `linger` says
    /// and flushing them as `flush` says.
    pub fn spawn_with(pool: PgPool, linger: Linger, flush: Flush) -> Self {
        let (send, mut received) = tokio::sync::mpsc::unbounded_channel::<Waiting>();
        let written = std::sync::Arc::new(Written::default());
        let counts = written.clone();
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(BATCH);
            let mut held: Option<sqlx::pool::PoolConnection<Postgres>> = None;
            while received.recv_many(&mut batch, BATCH).await > 0 {
                // Until the calls running have all appended, the batch is full, or the wait
                // is up. A call's row is sent before it stops counting as running, so its
                // row is in the channel by the time `none_running` is told.
                let linger = linger.wait(counts.calls_take());
                let until = tokio::time::Instant::now() + linger;
                while !linger.is_zero()
                    && batch.len() < BATCH
                    && counts.running.load(Ordering::Acquire) > 0
                {
                    let room = BATCH - batch.len();
                    tokio::select! {
                        received = received.recv_many(&mut batch, room) => if received == 0 {
                            break;
                        },
                        () = counts.none_running.notified() => {}
                        () = tokio::time::sleep_until(until) => break,
                    }
                }
                // Rows already sent (the last running call's among them) go in too.
                while batch.len() < BATCH {
                    match received.try_recv() {
                        Ok(waiting) => batch.push(waiting),
                        Err(_) => break,
                    }
                }
                let events: Vec<&Event> = batch.iter().map(|w| &w.event).collect();
                // The writer keeps its connection, so one backend, kept warm, serves every
                // batch; a connection that failed is let go and the next batch takes another.
                // A failed batch is not tried again: its commit may have happened.
                let appended = async {
                    let mut connection = match held.take() {
                        Some(connection) => connection,
                        None => pool.acquire().await?,
                    };
                    let ids = append_many(&mut connection, &events, flush).await?;
                    held = Some(connection);
                    Ok::<_, sqlx::Error>(ids)
                };
                match appended.await {
                    Ok(ids) if ids.len() == batch.len() => {
                        counts.batches.fetch_add(1, Ordering::Relaxed);
                        counts.rows.fetch_add(ids.len() as u64, Ordering::Relaxed);
                        for (waiting, id) in batch.drain(..).zip(ids) {
                            let _ = waiting.appended.send(Ok(id));
                        }
                    }
                    outcome => {
                        let why = match outcome {
                            Err(error) => error.to_string(),
                            Ok(_) => "the audit log appended fewer rows than asked".into(),
                        };
                        for waiting in batch.drain(..) {
                            let _ = waiting.appended.send(Err(why.clone()));
                        }
                    }
                }
            }
        });
        Self { send, written }
    }

    /// Batches committed and rows written so far (for the benchmark: rows per commit).
    pub fn written_so_far(&self) -> (u64, u64) {
        (
            self.written.batches.load(Ordering::Relaxed),
            self.written.rows.load(Ordering::Relaxed),
        )
    }

    /// A call starting whose row will follow: hold it while the call runs, and append its
    /// row through it.
    pub fn running(&self) -> Running {
        self.written.running.fetch_add(1, Ordering::AcqRel);
        Running {
            appender: self.clone(),
            since: std::time::Instant::now(),
        }
    }

    /// Appends `event`; returns its id once committed.
    pub async fn append(&self, event: Event) -> Result<i64, sqlx::Error> {
        self.queue(event)?.await
    }

    /// Hands `event` to the writer at once; the future answers when its row is committed.
    fn queue(
        &self,
        event: Event,
    ) -> Result<impl Future<Output = Result<i64, sqlx::Error>> + use<>, sqlx::Error> {
        let (appended, id) = tokio::sync::oneshot::channel();
        self.send
            .send(Waiting { event, appended })
            .map_err(|_| sqlx::Error::PoolClosed)?;
        Ok(async move {
            match id.await {
                Ok(Ok(id)) => Ok(id),
                Ok(Err(why)) => Err(sqlx::Error::Protocol(why)),
                Err(_) => Err(sqlx::Error::PoolClosed),
            }
        })
    }
}

/// Appends `events` in one statement, which is its own transaction unless `connection` is
/// in one already, and sets how that transaction's commit is flushed (`Flush`). `set_config`
/// with `is_local` lasts until the transaction ends, so the writer's connection carries
/// nothing over to its next statement or back to the pool.
pub async fn append_many(
    connection: &mut PgConnection,
    events: &[&Event],
    flush: Flush,
) -> Result<Vec<i64>, sqlx::Error> {
    if let [one] = events {
        let id = append_one(
            connection,
            &one.actor,
            &one.event,
            one.slug.as_deref(),
            Some(flush),
        );
        return Ok(vec![id.await?]);
    }
    let ids: Vec<Option<Uuid>> = events.iter().map(|e| e.actor.id).collect();
    let emails: Vec<Option<&str>> = events.iter().map(|e| e.actor.email.as_deref()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind().as_str()).collect();
    let slugs: Vec<Option<&str>> = events.iter().map(|e| e.slug.as_deref()).collect();
    let payloads: Vec<Value> = events.iter().map(|e| e.event.payload()).collect();
    // The arrays hold NULLs (no actor, no slug), which the macros' array types do not
    // spell: `as _` binds them as they are.
    let ids = sqlx::query_scalar!(
        r#"SELECT audit_append_many($1, $2, $3, $4, $5::jsonb[]) AS "id!"
         FROM set_config('synchronous_commit',
                         CASE WHEN $6 THEN 'off' ELSE current_setting('synchronous_commit') END,
                         true) AS flushed"#,
        ids as _,
        emails as _,
        kinds as _,
        slugs as _,
        payloads as _,
        flush == Flush::Background,
    )
    .fetch_all(connection)
    .await?;
    crate::metrics::audit_rows(ids.len());
    Ok(ids)
}

/// Appends one row in one statement, which is its own transaction unless `connection` is in
/// one already: `audit_chain_head` (migration 0015) takes the chain's lock and reads the last
/// hash, `audit_row_hash` hashes the row as `row_hash` does, and the INSERT is strad's own
/// prepared statement, with no PL/pgSQL around it. With `flush`, sets how the transaction's
/// commit is flushed, as `append_many` does; without, leaves the caller's setting.
async fn append_one(
    connection: &mut PgConnection,
    actor: &Actor,
    event: &AuditEvent,
    slug: Option<&str>,
    flush: Option<Flush>,
) -> Result<i64, sqlx::Error> {
    let id = sqlx::query_scalar!(
        r#"INSERT INTO audit_log (at, actor_id, actor_email, kind, slug, payload, prev_hash, hash)
         SELECT head.at, $1, $2, $3, $4, $5, head.prev,
                audit_row_hash(head.prev, head.at, $1, $2, $3, $4, $5)
         FROM audit_chain_head() AS head,
              set_config('synchronous_commit',
                         CASE WHEN $6 THEN 'off' ELSE current_setting('synchronous_commit') END,
                         true) AS flushed
         RETURNING id"#,
        actor.id,
        actor.email.as_deref(),
        event.kind().as_str(),
        slug,
        event.payload(),
        flush == Some(Flush::Background),
    )
    .fetch_one(connection)
    .await?;
    crate::metrics::audit_rows(1);
    Ok(id)
}

/// Walks the chain in id order; returns the id of the first row whose hash or link does not
/// hold, or `None` when the whole chain is intact.
pub async fn first_broken_row(conn: &mut PgConnection) -> Result<Option<i64>, sqlx::Error> {
    use futures::TryStreamExt;
    let mut rows = sqlx::query!(
        r#"SELECT id, (extract(epoch from at) * 1000000)::bigint AS "at_micros!", actor_id,
                actor_email, kind, slug, payload::text AS "payload_text!", prev_hash, hash
         FROM audit_log ORDER BY id"#,
    )
    .fetch(&mut *conn);
    let mut prev = GENESIS.to_vec();
    while let Some(row) = rows.try_next().await? {
        let expected = row_hash(
            &prev,
            row.at_micros,
            row.actor_id,
            row.actor_email.as_deref(),
            &row.kind,
            row.slug.as_deref(),
            &row.payload_text,
        );
        if row.prev_hash != prev || row.hash != expected {
            return Ok(Some(row.id));
        }
        prev = row.hash;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_wait_is_a_quarter_of_the_calls_time_within_its_bounds() {
        let paced = Linger::Paced {
            max: Duration::from_millis(10),
        };
        let ms = Duration::from_millis;
        assert_eq!(
            paced.wait(Duration::ZERO),
            LINGER,
            "never under a millisecond"
        );
        assert_eq!(paced.wait(ms(2)), LINGER);
        assert_eq!(paced.wait(ms(20)), ms(5));
        assert_eq!(paced.wait(ms(80)), ms(10), "never over its max");
        assert_eq!(Linger::Fixed(ms(60)).wait(ms(1)), ms(60));
    }

    #[test]
    fn the_calls_time_is_a_moving_average() {
        let written = Written::default();
        for _ in 0..64 {
            written.took(Duration::from_millis(40));
        }
        let settled = written.calls_take();
        assert!(
            settled > Duration::from_millis(39) && settled <= Duration::from_millis(40),
            "{settled:?}"
        );
        written.took(Duration::from_millis(1));
        let after_one_quick = written.calls_take();
        assert!(
            after_one_quick > Duration::from_millis(34)
                && after_one_quick < Duration::from_millis(36),
            "one quick call moves it an eighth of the way: {after_one_quick:?}"
        );
    }
}
