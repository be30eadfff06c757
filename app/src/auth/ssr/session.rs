//! What strad keeps in a tower-sessions session (stored in Postgres).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Session key of the signed-in person.
pub const PERSON_KEY: &str = "strad.person";

/// Session key of the last time activity extended the session (Unix seconds).
pub const TOUCHED_KEY: &str = "strad.touched";

/// How often activity extends a session's idle expiry. Extending it is a save (a write),
/// so a busy person writes once a minute, not once a request.
pub const TOUCH_EVERY_SECONDS: i64 = 60;

/// The signed-in person of a session, if any. Their activity keeps the session alive: the
/// idle expiry (`Expiry::OnInactivity`) is pushed back by marking the session changed, at
/// most once every `TOUCH_EVERY_SECONDS`; tower-sessions saves only a changed session.
/// A session past its absolute lifetime (`SessionPerson::ends_at`) is deleted instead, and
/// nobody is signed in.
pub async fn signed_in_person(
    session: &tower_sessions::Session,
) -> Result<Option<SessionPerson>, tower_sessions::session::Error> {
    let Some(person) = session.get::<SessionPerson>(PERSON_KEY).await? else {
        return Ok(None);
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    if person.has_ended(now) {
        session.flush().await?;
        return Ok(None);
    }
    let touched: Option<i64> = session.get(TOUCHED_KEY).await?;
    let due = touched.is_none_or(|at| now.saturating_sub(at) >= TOUCH_EVERY_SECONDS);
    if due && TOUCHES.claim(session.id(), touched, std::time::Instant::now()) {
        session.insert(TOUCHED_KEY, now).await?;
    }
    Ok(Some(person))
}

/// Which request of this process extends each session's expiry. Every request in flight
/// that loaded the session before the first one saved it finds the touch due; without this,
/// each saved the same row (at 32 requests at once, 32 writes a minute per session).
static TOUCHES: std::sync::LazyLock<Touches> = std::sync::LazyLock::new(Touches::default);

/// How long a claimed touch keeps the others from touching: long enough for its save, short
/// enough that a touch whose save failed is done again by a later request.
const CLAIM_HOLDS: std::time::Duration = std::time::Duration::from_secs(5);
/// Claims remembered at most; past it, all are forgotten (a few sessions are then touched twice).
const CLAIMS_MAX: usize = 100_000;

type Claims =
    std::collections::HashMap<tower_sessions::session::Id, (Option<i64>, std::time::Instant)>;

#[derive(Default)]
struct Touches(std::sync::Mutex<Claims>);

impl Touches {
    /// Whether this request is the one to replace the touch time `seen` of session `id`.
    fn claim(
        &self,
        id: Option<tower_sessions::session::Id>,
        seen: Option<i64>,
        now: std::time::Instant,
    ) -> bool {
        let Some(id) = id else {
            return true;
        };
        let mut claims = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((claimed, at)) = claims.get(&id)
            && *claimed == seen
            && now.saturating_duration_since(*at) < CLAIM_HOLDS
        {
            return false;
        }
        if claims.len() >= CLAIMS_MAX {
            claims.clear();
        }
        claims.insert(id, (seen, now));
        true
    }
}

/// The signed-in person, as stored in the session. Only the id: roles and the user row are
/// read on every request, so a revoked role takes effect at once (the busy routes read them
/// through the server's memo, which forgets them on every change).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPerson {
    pub user_id: Uuid,
    #[serde(default)]
    pub kind: SessionKind,
    /// The login token a token session was opened with: the session ends with it.
    #[serde(default)]
    pub token_id: Option<Uuid>,
    /// When the session ends however active it is (Unix seconds). A session stored without
    /// one has ended.
    #[serde(default)]
    pub ends_at: i64,
}

impl SessionPerson {
    pub fn has_ended(&self, now: i64) -> bool {
        now >= self.ends_at
    }

    /// May this sign-in change anything? A sign-in with a login token may only view (SPEC
    /// §3): no tool call, no pin, no admin or any other change, whatever roles its person
    /// holds. Every write — the write gate of every request, and each writing server
    /// function — asks this one question.
    pub fn may_write(&self) -> bool {
        self.kind.may_write()
    }
}

/// How the session was signed in (SPEC §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SessionKind {
    /// Through the identity provider (or local mode's link).
    #[default]
    Browser,
    /// From a personal login token (`?token=` on a console URL): may view, may not call
    /// tools through the playground or an app, nor change anything.
    Token,
}

impl SessionKind {
    pub fn may_write(self) -> bool {
        self == SessionKind::Browser
    }
}

#[cfg(test)]
mod person_tests {
    use super::*;

    #[test]
    fn a_session_ends_at_its_end_and_one_stored_without_an_end_has_ended() {
        let person = SessionPerson {
            user_id: Uuid::nil(),
            kind: SessionKind::Browser,
            token_id: None,
            ends_at: 1_000,
        };
        assert!(!person.has_ended(999));
        assert!(person.has_ended(1_000));
        let old: SessionPerson =
            serde_json::from_value(serde_json::json!({"user_id": Uuid::nil(), "kind": "Browser"}))
                .unwrap();
        assert!(old.has_ended(0));
    }

    #[test]
    fn only_a_browser_session_may_write() {
        assert!(SessionKind::Browser.may_write());
        assert!(!SessionKind::Token.may_write());
    }
}

#[cfg(test)]
mod touch_tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn one_request_touches_what_many_find_due() {
        let (touches, id, now) = (
            Touches::default(),
            tower_sessions::session::Id::default(),
            Instant::now(),
        );
        assert!(touches.claim(Some(id), Some(100), now));
        for _ in 0..31 {
            assert!(!touches.claim(Some(id), Some(100), now));
        }
        // Another session, and the same session once its touch time has moved on.
        assert!(touches.claim(Some(tower_sessions::session::Id::default()), Some(100), now));
        assert!(touches.claim(Some(id), Some(160), now));
    }

    #[test]
    fn a_touch_whose_save_failed_is_done_again_later() {
        let (touches, id, now) = (
            Touches::default(),
            tower_sessions::session::Id::default(),
            Instant::now(),
        );
        assert!(touches.claim(Some(id), None, now));
        assert!(!touches.claim(Some(id), None, now + Duration::from_secs(1)));
        assert!(touches.claim(Some(id), None, now + CLAIM_HOLDS));
    }

    #[test]
    fn a_session_without_an_id_yet_is_always_touched() {
        let touches = Touches::default();
        assert!(touches.claim(None, None, Instant::now()));
        assert!(touches.claim(None, None, Instant::now()));
    }
}
