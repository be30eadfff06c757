//! The listener of `CHANNEL`: what it hears is forgotten, and nothing is remembered while
//! it does not hear.

use std::sync::Arc;

use app::listen::Hearing;
use sqlx::PgPool;

use super::{CHANNEL, Memos};

impl Hearing for Memos {
    fn hearing(&self, on: bool) {
        self.set_live(on);
    }

    fn heard(&self, payload: &str) {
        Memos::heard(self, payload);
    }
}

/// Listens for announcements until the pool closes, reconnecting when the connection is
/// lost. Entries are used only while it listens.
pub fn spawn_listener(pool: PgPool, memos: Arc<Memos>) {
    app::listen::spawn(
        pool,
        CHANNEL,
        memos,
        "not hearing changes to authority; reading it from the database until heard again",
    );
}
