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

use std::time::Duration;

mod change_listener;
mod forget_after_writes;
mod race_free_memo;
mod remembered;

pub use change_listener::spawn_listener;
pub use forget_after_writes::forget_after_writes;
pub use race_free_memo::{Memo, Ticket};
pub use remembered::{Memos, PersonRow, TokenOwner};

/// The channel the triggers announce changes on.
pub const CHANNEL: &str = "strad_auth";

/// How long an entry may be used at most, announced changes or not: a bound on how long a
/// change made with the triggers switched off (by hand, in the database) goes unseen.
pub const FRESH_FOR: Duration = Duration::from_secs(2);
