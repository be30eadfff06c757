//! What a busy route's authority is read from — the session, the person and their roles, a
//! login token, an entitlement, a policy decision, a pin's identity — remembered in memory
//! for `FRESH_FOR` at most, so that an app's tool call, a frame load or an `/mcp` call does
//! not wait on PostgreSQL for rows that almost never change.
//!
//! Forgetting is what makes this safe, so it happens three ways:
//! - **Every change announces itself.** Triggers (migration 0006, and `db::migrate` for the
//!   session table) `NOTIFY strad_auth` when a row that authority is read from changes, from
//!   this strad, another instance or `strad` on the command line. The listener here forgets
//!   on receipt: everything for most tables, the one session for a session row.
//! - **This strad's own changes are forgotten before their answer is sent**: every request
//!   that may write (`forget_after_writes`) and the session store (`RememberingStore`)
//!   forget synchronously, so a sign-out or a revoked grant holds for the very next request.
//! - **Nothing is remembered unless the announcements are heard**: while the listener is
//!   not connected (at start-up, after a lost connection) every read goes to the database;
//!   on reconnecting, everything is forgotten. And no entry outlives `FRESH_FOR`.
//!
//! A read that raced a change cannot store what it read: each read holds a ticket for its
//! key, and forgetting (the key, or everything) voids the tickets taken before it. Reads
//! that overlap do not void each other's tickets: when an entry expires under many callers
//! at once, the first of their reads to finish is stored and the rest use it, rather than
//! each new read voiding the one before and nothing being stored for as long as the calls
//! keep coming.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use app::apps::ssr::pins::{self, PinHead};
use app::auth::Role;
use app::auth::ssr::session::SessionKind;
use app::auth::ssr::users::{self, UserRow};
use app::entitlements::policy::{Decision, Surface};
use app::entitlements::ssr::{authorize, grants};
use app::error::AppError;
use app::servers::ssr::registry::ServerRow;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use sqlx::PgPool;
use sqlx::postgres::PgListener;
use time::OffsetDateTime;
use tokio::sync::oneshot;
use tower_sessions::session::{Id, Record};
use uuid::Uuid;

/// The channel the triggers announce changes on.
pub const CHANNEL: &str = "strad_auth";

/// How long an entry may be used at most, announced changes or not: a bound on how long a
/// change made with the triggers switched off (by hand, in the database) goes unseen.
pub const FRESH_FOR: Duration = Duration::from_secs(2);

/// Entries one memo holds at most; past that it starts over.
const MAX_ENTRIES: usize = 100_000;

/// What every memo shares: whether announcements are heard, and the generation, which
/// forgetting everything moves on.
#[derive(Debug)]
struct Epoch {
    generation: AtomicU64,
    live: AtomicBool,
    fresh_for: Duration,
}

/// A read in progress for one key: stored only if nothing was forgotten since it began.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    generation: u64,
    number: u64,
}

/// One key: reads that began since `since` (the first ticket taken after the key was last
/// forgotten, in `since`'s generation) may store, and a stored value is replaced only by a
/// read that began after the one that stored it.
#[derive(Debug)]
struct Slot<V> {
    since: Ticket,
    value: Option<(Instant, u64, V)>,
}

/// Values by key, each stored by a read that began after the key was last forgotten.
#[derive(Debug)]
pub struct Memo<K, V> {
    epoch: Arc<Epoch>,
    tickets: AtomicU64,
    slots: Mutex<HashMap<K, Slot<V>>>,
}

impl<K: Hash + Eq + Clone, V: Clone> Memo<K, V> {
    fn new(epoch: Arc<Epoch>) -> Self {
        Self {
            epoch,
            tickets: AtomicU64::new(0),
            slots: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, Slot<V>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value remembered for `key`, while fresh and of this generation.
    pub fn get(&self, key: &K) -> Option<V> {
        if !self.epoch.live.load(Ordering::Acquire) {
            return None;
        }
        let generation = self.epoch.generation.load(Ordering::Acquire);
        let slots = self.lock();
        let slot = slots.get(key)?;
        let (at, _, value) = slot.value.as_ref()?;
        (slot.since.generation == generation && at.elapsed() < self.epoch.fresh_for)
            .then(|| value.clone())
    }

    /// Starts a read of `key`; `None` while announcements are not heard (nothing is stored).
    pub fn begin(&self, key: &K) -> Option<Ticket> {
        if !self.epoch.live.load(Ordering::Acquire) {
            return None;
        }
        let ticket = Ticket {
            generation: self.epoch.generation.load(Ordering::Acquire),
            number: self.tickets.fetch_add(1, Ordering::Relaxed),
        };
        let mut slots = self.lock();
        match slots.get(key) {
            // Reads of this key began in this generation and nothing was forgotten since:
            // this one joins them.
            Some(slot) if slot.since.generation == ticket.generation => {}
            _ => {
                if slots.len() >= MAX_ENTRIES {
                    slots.clear();
                }
                let slot = Slot {
                    since: ticket,
                    value: None,
                };
                slots.insert(key.clone(), slot);
            }
        }
        Some(ticket)
    }

    /// Stores what the read of `ticket` found, unless `key` or everything was forgotten
    /// since it began, or what is stored was read by a read that began after it.
    pub fn finish(&self, key: &K, ticket: Ticket, value: V) {
        let mut slots = self.lock();
        if let Some(slot) = slots.get_mut(key)
            && ticket.generation == slot.since.generation
            && ticket.number >= slot.since.number
            && ticket.generation == self.epoch.generation.load(Ordering::Acquire)
            && slot
                .value
                .as_ref()
                .is_none_or(|(_, stored_by, _)| *stored_by < ticket.number)
        {
            slot.value = Some((Instant::now(), ticket.number, value));
        }
    }

    pub fn forget(&self, key: &K) {
        self.lock().remove(key);
    }

    /// The remembered value of `key`, or what `read` reads, stored when `keep` says so.
    pub async fn get_or_read<E>(
        &self,
        key: K,
        keep: impl Fn(&V) -> bool,
        read: impl Future<Output = Result<V, E>>,
    ) -> Result<V, E> {
        self.get_or_read_while(key, |_| true, keep, read).await
    }

    /// `get_or_read`, using a remembered value only while `usable` holds for it (a session
    /// or a token until its expiry).
    pub async fn get_or_read_while<E>(
        &self,
        key: K,
        usable: impl Fn(&V) -> bool,
        keep: impl Fn(&V) -> bool,
        read: impl Future<Output = Result<V, E>>,
    ) -> Result<V, E> {
        if let Some(value) = self.get(&key).filter(|value| usable(value)) {
            return Ok(value);
        }
        let ticket = self.begin(&key);
        let value = read.await?;
        if let Some(ticket) = ticket
            && keep(&value)
        {
            self.finish(&key, ticket, value.clone());
        }
        Ok(value)
    }
}

/// A login token's owner as `/mcp` needs it, and until when the token lives.
#[derive(Clone, Debug)]
pub struct TokenOwner {
    pub token_id: Uuid,
    pub user: UserRow,
    pub roles: Vec<Role>,
    pub expires_at: OffsetDateTime,
}

/// Everything remembered, and the waiters of `caught_up`.
pub struct Memos {
    epoch: Arc<Epoch>,
    pub sessions: Memo<Id, Option<Record>>,
    users: Memo<Uuid, Option<(UserRow, Vec<Role>)>>,
    entitled: Memo<(Uuid, String), ServerRow>,
    decisions: Memo<(SessionKind, String, String, Surface), Decision>,
    pin_heads: Memo<(Uuid, String, String), Option<PinHead>>,
    tokens: Memo<Vec<u8>, Option<TokenOwner>>,
    reachable: Memo<(String, Option<Vec<String>>), Vec<ServerRow>>,
    syncs: Mutex<HashMap<u64, oneshot::Sender<()>>>,
    /// Announcements heard since start-up (tests wait on it moving).
    heard: AtomicU64,
}

impl Memos {
    pub fn new(fresh_for: Duration) -> Self {
        let epoch = Arc::new(Epoch {
            generation: AtomicU64::new(0),
            live: AtomicBool::new(false),
            fresh_for,
        });
        Self {
            sessions: Memo::new(epoch.clone()),
            users: Memo::new(epoch.clone()),
            entitled: Memo::new(epoch.clone()),
            decisions: Memo::new(epoch.clone()),
            pin_heads: Memo::new(epoch.clone()),
            tokens: Memo::new(epoch.clone()),
            reachable: Memo::new(epoch.clone()),
            epoch,
            syncs: Mutex::default(),
            heard: AtomicU64::new(0),
        }
    }

    /// Forgets everything, and voids every read in progress.
    pub fn forget_all(&self) {
        self.epoch.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Announcements heard since start-up.
    pub fn heard_so_far(&self) -> u64 {
        self.heard.load(Ordering::Acquire)
    }

    /// Whether announcements are heard (so entries may be used).
    pub fn is_live(&self) -> bool {
        self.epoch.live.load(Ordering::Acquire)
    }

    fn set_live(&self, live: bool) {
        // Forget first when going live: nothing from before the listener may be used.
        self.forget_all();
        self.epoch.live.store(live, Ordering::Release);
        self.forget_all();
    }

    /// What one announcement says: a session's id, a `caught_up` marker, or anything else
    /// (forget everything).
    fn heard(&self, payload: &str) {
        if let Some(id) = payload.strip_prefix("session:") {
            match id.parse::<Id>() {
                Ok(id) => self.sessions.forget(&id),
                Err(_) => self.forget_all(),
            }
        } else if let Some(mark) = payload.strip_prefix("sync:") {
            if let Ok(mark) = mark.parse::<u64>()
                && let Some(waiter) = self
                    .syncs
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&mark)
            {
                let _ = waiter.send(());
            }
        } else {
            self.forget_all();
        }
        self.heard.fetch_add(1, Ordering::AcqRel);
    }

    /// Returns once every change committed before the call has been heard (announcements
    /// arrive in commit order): sends a marker through the channel and waits for it.
    pub async fn caught_up(&self, pool: &PgPool) -> Result<(), sqlx::Error> {
        let mark: u64 = rand::random();
        let (tx, rx) = oneshot::channel();
        self.syncs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(mark, tx);
        sqlx::query!(
            "SELECT FROM pg_notify($1, $2)",
            CHANNEL,
            format!("sync:{mark}")
        )
        .execute(pool)
        .await?;
        let _ = rx.await;
        Ok(())
    }

    /// The person `id` with their roles.
    pub async fn user(
        &self,
        pool: &PgPool,
        id: Uuid,
    ) -> Result<Option<(UserRow, Vec<Role>)>, sqlx::Error> {
        self.users
            .get_or_read(id, Option::is_some, users::find_user_with_roles(pool, id))
            .await
    }

    /// `authorize::entitled_server_of`, remembered when entitled.
    pub async fn entitled(
        &self,
        pool: &PgPool,
        user: Uuid,
        slug: &str,
    ) -> Result<ServerRow, AppError> {
        self.entitled
            .get_or_read(
                (user, slug.to_owned()),
                |_| true,
                authorize::entitled_server_of(pool, user, slug),
            )
            .await
    }

    /// `authorize::decision_for`.
    pub async fn decision(
        &self,
        pool: &PgPool,
        kind: SessionKind,
        slug: &str,
        tool: &str,
        surface: Surface,
    ) -> Result<Decision, AppError> {
        self.decisions
            .get_or_read(
                (kind, slug.to_owned(), tool.to_owned(), surface),
                |_| true,
                authorize::decision_for(pool, kind, slug, tool, surface),
            )
            .await
    }

    /// `pins::head`, remembered when pinned.
    pub async fn pin_head(
        &self,
        pool: &PgPool,
        user: Uuid,
        slug: &str,
        uri: &str,
    ) -> Result<Option<PinHead>, sqlx::Error> {
        self.pin_heads
            .get_or_read(
                (user, slug.to_owned(), uri.to_owned()),
                Option::is_some,
                pins::head(pool, user, slug, uri),
            )
            .await
    }

    /// The owner of the live login token `secret`. A remembered token is used only while
    /// it has not expired; an unknown one is never remembered.
    pub async fn token(
        &self,
        pool: &PgPool,
        secret: &str,
    ) -> Result<Option<TokenOwner>, sqlx::Error> {
        let read = async {
            let found = app::tokens::ssr::store::verify_with_owner(pool, secret).await?;
            Ok(found.map(|(token_id, user, roles, expires_at)| TokenOwner {
                token_id,
                user,
                roles,
                expires_at,
            }))
        };
        self.tokens
            .get_or_read_while(
                app::tokens::ssr::store::hash(secret),
                |owner| {
                    owner
                        .as_ref()
                        .is_some_and(|o| o.expires_at > OffsetDateTime::now_utc())
                },
                Option::is_some,
                read,
            )
            .await
    }

    /// `grants::reachable_servers`.
    pub async fn reachable(
        &self,
        pool: &PgPool,
        email: &str,
        only: Option<&[String]>,
    ) -> Result<Vec<ServerRow>, sqlx::Error> {
        self.reachable
            .get_or_read(
                (email.to_owned(), only.map(<[String]>::to_vec)),
                |_| true,
                grants::reachable_servers(pool, email, only),
            )
            .await
    }
}

/// Listens for announcements until the pool closes, reconnecting when the connection is
/// lost. Entries are used only while it listens.
pub fn spawn_listener(pool: PgPool, memos: Arc<Memos>) {
    tokio::spawn(async move {
        let closed = pool.close_event();
        tokio::pin!(closed);
        loop {
            let listening = async {
                let mut listener = PgListener::connect_with(&pool).await?;
                listener.listen(CHANNEL).await?;
                memos.set_live(true);
                loop {
                    match listener.try_recv().await? {
                        Some(notification) => memos.heard(notification.payload()),
                        // The connection was lost: what was announced meanwhile is lost too.
                        None => return Ok::<(), sqlx::Error>(()),
                    }
                }
            };
            tokio::select! {
                () = &mut closed => return,
                ended = listening => {
                    memos.set_live(false);
                    if let Err(error) = ended {
                        tracing::warn!(error.message = %error, "not hearing changes to authority; reading it from the database until heard again");
                    }
                }
            }
            tokio::select! {
                () = &mut closed => return,
                () = tokio::time::sleep(Duration::from_millis(500)) => {}
            }
        }
    });
}

/// Paths whose requests write no row authority is read from (and are the busy ones).
fn writes_no_authority(path: &str) -> bool {
    path == "/mcp"
        || path.starts_with("/mcp/")
        || (path.starts_with("/apps/")
            && (path.ends_with("/tools/call")
                || path.ends_with("/resources/read")
                || path.ends_with("/opening-call")))
        || (path.starts_with("/servers/") && path.ends_with("/tools/call"))
}

/// Forgets everything once a request that may have changed authority has been answered
/// by the handler, before the answer leaves: any method but GET, HEAD and OPTIONS, and
/// sign-in (a GET that writes the person). The busy routes write only audit rows.
pub async fn forget_after_writes(
    State(memos): State<Arc<Memos>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let may_write = (!matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) && !writes_no_authority(path))
        || path.starts_with("/auth/");
    let response = next.run(request).await;
    if may_write {
        memos.forget_all();
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memo(fresh_for: Duration) -> Memo<&'static str, u32> {
        let epoch = Arc::new(Epoch {
            generation: AtomicU64::new(0),
            live: AtomicBool::new(true),
            fresh_for,
        });
        Memo::new(epoch)
    }

    #[test]
    fn a_finished_read_is_remembered_until_forgotten() {
        let memo = memo(Duration::from_secs(60));
        let ticket = memo.begin(&"a").unwrap();
        memo.finish(&"a", ticket, 1);
        assert_eq!(memo.get(&"a"), Some(1));
        memo.forget(&"a");
        assert_eq!(memo.get(&"a"), None);
    }

    #[test]
    fn forgetting_everything_voids_what_is_remembered_and_reads_in_progress() {
        let memo = memo(Duration::from_secs(60));
        let ticket = memo.begin(&"a").unwrap();
        memo.finish(&"a", ticket, 1);
        let racing = memo.begin(&"b").unwrap();
        memo.epoch.generation.fetch_add(1, Ordering::AcqRel);
        assert_eq!(memo.get(&"a"), None);
        memo.finish(&"b", racing, 2);
        assert_eq!(
            memo.get(&"b"),
            None,
            "read before the change, stored after it"
        );
    }

    #[test]
    fn a_read_that_raced_forgetting_its_key_is_not_stored() {
        let memo = memo(Duration::from_secs(60));
        let racing = memo.begin(&"a").unwrap();
        memo.forget(&"a");
        memo.finish(&"a", racing, 1);
        assert_eq!(memo.get(&"a"), None);
        // Forgetting between two reads voids the first, whenever it finishes.
        let before = memo.begin(&"a").unwrap();
        memo.forget(&"a");
        let after = memo.begin(&"a").unwrap();
        memo.finish(&"a", before, 1);
        assert_eq!(memo.get(&"a"), None);
        memo.finish(&"a", after, 2);
        assert_eq!(memo.get(&"a"), Some(2));
    }

    /// When an entry expires under many callers, their reads overlap: each new read must not
    /// void the ones in flight, or under a steady stream of calls nothing is ever stored.
    #[test]
    fn overlapping_reads_store_the_first_to_finish_and_never_an_older_read() {
        let memo = memo(Duration::from_secs(60));
        let first = memo.begin(&"a").unwrap();
        let second = memo.begin(&"a").unwrap();
        memo.finish(&"a", first, 1);
        assert_eq!(memo.get(&"a"), Some(1), "stored though a later read began");
        memo.finish(&"a", second, 2);
        assert_eq!(memo.get(&"a"), Some(2), "a later read replaces it");
        let older = memo.begin(&"a").unwrap();
        let newer = memo.begin(&"a").unwrap();
        memo.finish(&"a", newer, 4);
        memo.finish(&"a", older, 3);
        assert_eq!(
            memo.get(&"a"),
            Some(4),
            "an older read never replaces a newer one"
        );
        // A steady stream: every read overlaps the next, and each one's value is stored.
        let mut in_flight = memo.begin(&"b").unwrap();
        for n in 0..10 {
            let next = memo.begin(&"b").unwrap();
            memo.finish(&"b", in_flight, n);
            assert_eq!(memo.get(&"b"), Some(n));
            in_flight = next;
        }
    }

    #[test]
    fn nothing_is_remembered_while_changes_are_not_heard() {
        let memo = memo(Duration::from_secs(60));
        let ticket = memo.begin(&"a").unwrap();
        memo.finish(&"a", ticket, 1);
        memo.epoch.live.store(false, Ordering::Release);
        assert_eq!(memo.get(&"a"), None);
        assert!(memo.begin(&"a").is_none());
    }

    #[test]
    fn an_entry_is_used_only_while_fresh() {
        let memo = memo(Duration::from_millis(20));
        let ticket = memo.begin(&"a").unwrap();
        memo.finish(&"a", ticket, 1);
        assert_eq!(memo.get(&"a"), Some(1));
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(memo.get(&"a"), None);
    }

    #[test]
    fn announcements_forget_a_session_or_everything() {
        let memos = Memos::new(Duration::from_secs(60));
        memos.set_live(true);
        let (one, two) = (Id::default(), Id::default());
        let record = |id: Id| Record {
            id,
            data: Default::default(),
            expiry_date: OffsetDateTime::now_utc() + time::Duration::hours(1),
        };
        for id in [one, two] {
            let ticket = memos.sessions.begin(&id).unwrap();
            memos.sessions.finish(&id, ticket, Some(record(id)));
        }
        memos.heard(&format!("session:{one}"));
        assert!(memos.sessions.get(&one).is_none());
        assert!(memos.sessions.get(&two).is_some());
        memos.heard("all");
        assert!(memos.sessions.get(&two).is_none());
    }
}
