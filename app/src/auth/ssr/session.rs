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
pub async fn signed_in_person(
    session: &tower_sessions::Session,
) -> Result<Option<SessionPerson>, tower_sessions::session::Error> {
    let Some(person) = session.get::<SessionPerson>(PERSON_KEY).await? else {
        return Ok(None);
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let touched: Option<i64> = session.get(TOUCHED_KEY).await?;
    if touched.is_none_or(|at| now.saturating_sub(at) >= TOUCH_EVERY_SECONDS) {
        session.insert(TOUCHED_KEY, now).await?;
    }
    Ok(Some(person))
}

/// The signed-in person, as stored in the session. Only the id: roles and the user row are
/// read on every request, so a revoked role takes effect at once (the busy routes read them
/// through the server's memo, which forgets them on every change).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPerson {
    pub user_id: Uuid,
    #[serde(default)]
    pub kind: SessionKind,
}

/// How the session was signed in (SPEC §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SessionKind {
    /// Through the identity provider (or local mode's link).
    #[default]
    Browser,
    /// From a personal login token (`?token=` on a console URL): may view, may not call
    /// tools through the playground or an app.
    Token,
}
