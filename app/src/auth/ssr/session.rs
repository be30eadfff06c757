//! What strad keeps in a tower-sessions session (stored in Postgres).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Session key of the signed-in person.
pub const PERSON_KEY: &str = "strad.person";

/// The signed-in person, as stored in the session. Only the id: roles and the user row are
/// read from the database on every request, so a revoked role takes effect at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionPerson {
    pub user_id: Uuid,
    #[serde(default)]
    pub kind: SessionKind,
}

/// How the session was signed in (SPEC §3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SessionKind {
    /// Through the identity provider (or local mode's link).
    #[default]
    Browser,
    /// From a personal login token (`?token=` on a console URL): may view, may not call
    /// tools through the playground or an app.
    Token,
}
