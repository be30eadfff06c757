//! The session store: tower-sessions' PostgreSQL store, with sessions remembered in memory
//! (`authority_cache::Memos::sessions`) under the rules of `authority_cache`. This strad
//! forgets a session it saves, creates or deletes once the write is done; a change made
//! anywhere else is announced by the session table's trigger (`db::migrate`). A remembered
//! session is used only until its expiry, as the store's own query would.

use std::sync::Arc;

use async_trait::async_trait;
use time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};
use tower_sessions_sqlx_store::PostgresStore;

use crate::authority_cache::Memos;

#[derive(Clone)]
pub struct RememberingStore {
    store: PostgresStore,
    memos: Arc<Memos>,
}

impl RememberingStore {
    pub fn new(store: PostgresStore, memos: Arc<Memos>) -> Self {
        Self { store, memos }
    }
}

impl std::fmt::Debug for RememberingStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RememberingStore").finish_non_exhaustive()
    }
}

#[async_trait]
impl SessionStore for RememberingStore {
    async fn create(&self, record: &mut Record) -> session_store::Result<()> {
        let created = self.store.create(record).await;
        self.memos.sessions.forget(&record.id);
        created
    }

    async fn save(&self, record: &Record) -> session_store::Result<()> {
        let saved = self.store.save(record).await;
        self.memos.sessions.forget(&record.id);
        saved
    }

    async fn load(&self, id: &Id) -> session_store::Result<Option<Record>> {
        self.memos
            .sessions
            .get_or_read_while(
                *id,
                |record| {
                    record
                        .as_ref()
                        .is_some_and(|r| r.expiry_date > OffsetDateTime::now_utc())
                },
                Option::is_some,
                self.store.load(id),
            )
            .await
    }

    async fn delete(&self, id: &Id) -> session_store::Result<()> {
        let deleted = self.store.delete(id).await;
        self.memos.sessions.forget(id);
        deleted
    }
}
