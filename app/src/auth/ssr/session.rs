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
}
