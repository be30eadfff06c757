//! The audit writer busy routes append through (`Appender`): one task, on a connection of
//! its own, that commits the rows of many callers together (group commit), each caller
//! waiting until its own row is committed. The statements are `writer`'s.

use std::sync::atomic::Ordering;
use std::time::Duration;

use sqlx::{PgPool, Postgres};

use super::writer::{Event, Flush, append_many};

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
