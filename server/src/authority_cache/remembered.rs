//! Everything remembered: the session, the person and their roles, a login token, an
//! entitlement, a policy decision, a pin's identity, the servers a person may reach.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use app::apps::ssr::pins::{self, PinHead};
use app::auth::Role;
use app::auth::ssr::session::SessionKind;
use app::auth::ssr::users::{self, UserRow};
use app::entitlements::policy::{Decision, Surface};
use app::entitlements::ssr::{authorize, grants};
use app::error::AppError;
use app::servers::ssr::registry::ServerRow;
use sqlx::PgPool;
use time::OffsetDateTime;
use tokio::sync::oneshot;
use tower_sessions::session::{Id, Record};
use uuid::Uuid;

use super::CHANNEL;
use super::race_free_memo::{Epoch, Memo};

/// A login token's owner as `/mcp` needs it, and until when the token lives.
#[derive(Clone, Debug)]
pub struct TokenOwner {
    pub token_id: Uuid,
    pub user: UserRow,
    pub roles: Vec<Role>,
    pub expires_at: OffsetDateTime,
}

/// A person's row and roles, as remembered: shared, not copied, with each request that
/// reads them.
pub type PersonRow = Arc<(UserRow, Vec<Role>)>;

/// Everything remembered, and the waiters of `caught_up`.
pub struct Memos {
    epoch: Arc<Epoch>,
    pub sessions: Memo<Id, Option<Record>>,
    /// Shared, not copied, with each request that reads them (a frame load reads both).
    users: Memo<Uuid, Option<PersonRow>>,
    entitled: Memo<(Uuid, String), Arc<ServerRow>>,
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

    pub(super) fn set_live(&self, live: bool) {
        // Forget first when going live: nothing from before the listener may be used.
        self.forget_all();
        self.epoch.live.store(live, Ordering::Release);
        self.forget_all();
    }

    /// What one announcement says: a session's id, a `caught_up` marker, or anything else
    /// (forget everything).
    pub(super) fn heard(&self, payload: &str) {
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
    pub async fn user(&self, pool: &PgPool, id: Uuid) -> Result<Option<PersonRow>, sqlx::Error> {
        let read = async {
            let found = users::find_user_with_roles(pool, id).await?;
            Ok(found.map(Arc::new))
        };
        self.users.get_or_read(id, Option::is_some, read).await
    }

    /// `authorize::entitled_server_of`, remembered when entitled.
    pub async fn entitled(
        &self,
        pool: &PgPool,
        user: Uuid,
        slug: &str,
    ) -> Result<Arc<ServerRow>, AppError> {
        let read = async {
            let server = authorize::entitled_server_of(pool, user, slug).await?;
            Ok(Arc::new(server))
        };
        self.entitled
            .get_or_read((user, slug.to_owned()), |_| true, read)
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

#[cfg(test)]
mod tests {
    use super::*;

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
