//! A guess of whose a session is, so that a busy route (an app's tool call, a frame load)
//! can read that person's rows at the same time as the session itself instead of after it.
//! The guess only chooses what to read early: the session, loaded as on every request,
//! decides. A wrong or stale guess (another person signed in on the cookie, a sign-out, a
//! restart) costs the reads once more, never a wrong answer.

use std::collections::HashMap;
use std::sync::Mutex;

use app::auth::ssr::session::{SessionPerson, signed_in_person};
use tower_sessions::Session;
use tower_sessions::session::Id;

/// The person each recently seen session belonged to, in memory.
#[derive(Default)]
pub struct SessionHints(Mutex<HashMap<Id, SessionPerson>>);

/// Hints kept at most; past that the map starts over.
const MAX_HINTS: usize = 100_000;

impl SessionHints {
    fn guess(&self, session: &Session) -> Option<SessionPerson> {
        let id = session.id()?;
        self.lock().get(&id).copied()
    }

    fn remember(&self, session: &Session, person: Option<SessionPerson>) {
        let Some(id) = session.id() else {
            return;
        };
        let mut hints = self.lock();
        match person {
            Some(person) => {
                if hints.len() >= MAX_HINTS {
                    hints.clear();
                }
                hints.insert(id, person);
            }
            None => {
                hints.remove(&id);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Id, SessionPerson>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The signed-in person of `session` and what `read` reads for them; `None` when nobody is
/// signed in. When the session's person can be guessed, `read` runs for the guess while
/// the session loads, and its result is used only if the session names that very person.
pub async fn with_person<T, F, Fut>(
    hints: &SessionHints,
    session: &Session,
    read: F,
) -> Result<Option<(SessionPerson, T)>, tower_sessions::session::Error>
where
    F: Fn(SessionPerson) -> Fut,
    Fut: Future<Output = T>,
{
    if let Some(guess) = hints.guess(session) {
        let (person, early) = tokio::join!(signed_in_person(session), read(guess));
        let person = person?;
        hints.remember(session, person);
        return Ok(match person {
            Some(person) if person == guess => Some((person, early)),
            Some(person) => Some((person, read(person).await)),
            None => None,
        });
    }
    let person = signed_in_person(session).await?;
    hints.remember(session, person);
    Ok(match person {
        Some(person) => Some((person, read(person).await)),
        None => None,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use app::auth::ssr::session::{PERSON_KEY, SessionKind};
    use tower_sessions::session::Record;
    use tower_sessions::{MemoryStore, SessionStore};
    use uuid::Uuid;

    use super::*;

    fn person() -> SessionPerson {
        SessionPerson {
            user_id: Uuid::new_v4(),
            kind: SessionKind::Browser,
            token_id: None,
            ends_at: i64::MAX,
        }
    }

    thread_local! {
        static STORE: Arc<MemoryStore> = Arc::new(MemoryStore::default());
    }

    fn store_of(_session: &Session) -> Arc<MemoryStore> {
        STORE.with(Arc::clone)
    }

    /// A stored session of `person` (or of nobody), and a handle on it as a request has.
    async fn stored(person: Option<SessionPerson>) -> Session {
        let store = STORE.with(Arc::clone);
        let mut record = Record {
            id: Id::default(),
            data: Default::default(),
            expiry_date: time::OffsetDateTime::now_utc() + time::Duration::hours(1),
        };
        if let Some(person) = person {
            record
                .data
                .insert(PERSON_KEY.into(), serde_json::to_value(person).unwrap());
        }
        store.create(&mut record).await.unwrap();
        Session::new(Some(record.id), store, None)
    }

    /// Reads "the person's rows" (their id), counting each read.
    fn reader(reads: &AtomicUsize) -> impl Fn(SessionPerson) -> std::future::Ready<Uuid> + '_ {
        move |person| {
            reads.fetch_add(1, Ordering::SeqCst);
            std::future::ready(person.user_id)
        }
    }

    #[tokio::test]
    async fn a_right_guess_reads_once_and_a_wrong_one_never_answers() {
        let (alice, mallory) = (person(), person());
        let hints = SessionHints::default();
        let session = stored(Some(alice)).await;
        let reads = AtomicUsize::new(0);

        // No guess yet: the session first, then the reads.
        let found = with_person(&hints, &session, reader(&reads)).await.unwrap();
        assert_eq!(found, Some((alice, alice.user_id)));
        assert_eq!(reads.load(Ordering::SeqCst), 1);

        // The next request on the session: the guess is right, read once, ahead.
        let session = Session::new(session.id(), store_of(&session), None);
        assert_eq!(hints.guess(&session), Some(alice));
        reads.store(0, Ordering::SeqCst);
        let found = with_person(&hints, &session, reader(&reads)).await.unwrap();
        assert_eq!(found, Some((alice, alice.user_id)));
        assert_eq!(reads.load(Ordering::SeqCst), 1);

        // A wrong guess: the rows read for it are thrown away, and the session's own person's
        // rows are read and answered.
        let session = Session::new(session.id(), store_of(&session), None);
        hints.remember(&session, Some(mallory));
        reads.store(0, Ordering::SeqCst);
        let found = with_person(&hints, &session, reader(&reads)).await.unwrap();
        assert_eq!(found, Some((alice, alice.user_id)));
        assert_eq!(reads.load(Ordering::SeqCst), 2);
        assert_eq!(hints.guess(&session), Some(alice), "the guess is corrected");
    }

    #[tokio::test]
    async fn a_session_of_nobody_answers_nobody_whatever_the_guess() {
        let hints = SessionHints::default();
        let session = stored(None).await;
        hints.remember(&session, Some(person()));
        let reads = AtomicUsize::new(0);
        let found = with_person(&hints, &session, reader(&reads)).await.unwrap();
        assert_eq!(found, None);
        assert_eq!(hints.guess(&session), None, "the stale guess is dropped");
    }
}
