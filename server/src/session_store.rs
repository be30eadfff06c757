//! The session store: tower-sessions' PostgreSQL store, with sessions remembered in memory
//! (`authority_cache::Memos::sessions`) under the rules of `authority_cache`. This strad
//! forgets a session it saves, creates or deletes once the write is done; a change made
//! anywhere else is announced by the session table's trigger (`db::migrate`). A remembered
//! session is used only until its expiry, as the store's own query would.

use std::sync::Arc;

use async_trait::async_trait;
use axum::http::{HeaderMap, header};
use time::OffsetDateTime;
use tower_sessions::cookie::Cookie;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{self, SessionStore};
use tower_sessions::{Expiry, Session};
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

/// A request's console session without the session layer, for the one route answered before
/// routing on the console's origin (`frame_loads`), which reads the session and never
/// changes it: the session the layer would hand the route, from the same store and cookie.
#[derive(Clone)]
pub struct CookieSessions {
    store: Arc<RememberingStore>,
    cookie: &'static str,
    expiry: Expiry,
}

impl CookieSessions {
    pub fn new(store: RememberingStore, cookie: &'static str, expiry: Expiry) -> Self {
        Self {
            store: Arc::new(store),
            cookie,
            expiry,
        }
    }

    /// The session `headers`' cookie names; loaded from the store when first read.
    pub fn session_of(&self, headers: &HeaderMap) -> Session {
        let id = session_id(headers, self.cookie);
        Session::new(id, self.store.clone(), Some(self.expiry))
    }
}

/// The session id in `headers`' cookie `name`, read as the session layer reads it (through
/// tower-cookies): every `Cookie` header, each `;`-separated cookie percent-decoded, the last
/// of that name deciding; a value that is not an id is no session.
fn session_id(headers: &HeaderMap, name: &str) -> Option<Id> {
    let mut value = None;
    for header in headers.get_all(header::COOKIE) {
        let Ok(text) = std::str::from_utf8(header.as_bytes()) else {
            continue;
        };
        for piece in text.split(';') {
            if let Ok(cookie) = Cookie::parse_encoded(piece)
                && cookie.name() == name
            {
                value = Some(cookie.value().to_owned());
            }
        }
    }
    value?.parse().ok()
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn cookies(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append(header::COOKIE, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn the_session_id_is_read_as_the_session_layer_reads_it() {
        let (one, two) = (Id(1), Id(2));
        let read = |values: &[&str]| session_id(&cookies(values), "s");
        assert_eq!(read(&[&format!("a=1; s={one}; b=2")]), Some(one));
        assert_eq!(
            read(&[&format!("s={one}"), &format!("s={two}")]),
            Some(two),
            "the last decides"
        );
        assert_eq!(
            read(&[&format!("s={one}; s={two}")]),
            Some(two),
            "the last decides"
        );
        let encoded = one.to_string().replacen('A', "%41", 1);
        assert_eq!(
            read(&[&format!("s={encoded}")]),
            Some(one),
            "percent-decoded"
        );
        assert_eq!(
            read(&[&format!("S={one}; ss={one}")]),
            None,
            "the name exactly"
        );
        assert_eq!(
            read(&[&format!("s={one}"), "s=not-an-id"]),
            None,
            "the last decides"
        );
        assert_eq!(read(&[]), None);
    }
}
