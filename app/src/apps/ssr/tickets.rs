//! Frame tickets: the app session a frame load is bound to (SPEC §6). The console issues one
//! each time it opens an app for a person; the frame route accepts it once, for that person
//! and that server, within a few minutes, and serves the resource the ticket names. A page
//! cannot make one: it never sees the console's pages, and the ticket in its own address is
//! spent — a reload, a `location = …` or a forged ticket gets an inert document.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

/// How long an issued ticket waits for its frame to load.
const TTL: Duration = Duration::from_secs(300);
/// Tickets held at once; past it, the expired go, then the oldest.
const MAX: usize = 100_000;

struct Ticket {
    user: Uuid,
    slug: String,
    uri: String,
    issued: Instant,
}

#[derive(Default)]
pub struct FrameTickets(Mutex<HashMap<String, Ticket>>);

impl FrameTickets {
    /// A fresh ticket (128 random bits, hex) for `user` to load `uri` of `slug` once.
    pub fn issue(&self, user: Uuid, slug: &str, uri: &str) -> String {
        let ticket = format!("{:032x}", rand::random::<u128>());
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if held.len() >= MAX {
            held.retain(|_, t| t.issued.elapsed() < TTL);
            while held.len() >= MAX {
                let Some(oldest) = held
                    .iter()
                    .min_by_key(|(_, t)| t.issued)
                    .map(|(k, _)| k.clone())
                else {
                    break;
                };
                held.remove(&oldest);
            }
        }
        held.insert(
            ticket.clone(),
            Ticket {
                user,
                slug: slug.to_owned(),
                uri: uri.to_owned(),
                issued: Instant::now(),
            },
        );
        ticket
    }

    /// The resource a live ticket of `user` for `slug` names, without spending it.
    pub fn peek(&self, ticket: &str, user: Uuid, slug: &str) -> Option<String> {
        let tickets = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let found = tickets.get(ticket)?;
        (found.user == user && found.slug == slug && found.issued.elapsed() < TTL)
            .then(|| found.uri.clone())
    }

    /// Spends `ticket`: the resource URI it was issued for, when it is unspent, unexpired and
    /// was issued to `user` for `slug`. Any use spends it, right or wrong.
    pub fn redeem(&self, ticket: &str, user: Uuid, slug: &str) -> Option<String> {
        let found = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(ticket)?;
        (found.user == user && found.slug == slug && found.issued.elapsed() < TTL)
            .then_some(found.uri)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_is_spent_once_by_its_person_for_its_server() {
        let tickets = FrameTickets::default();
        let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
        let t = tickets.issue(alice, "clock", "ui://clock/app.html");
        assert_eq!(t.len(), 32);
        assert_eq!(tickets.peek(&t, bob, "clock"), None);
        assert_eq!(tickets.peek(&t, alice, "other"), None);
        assert_eq!(
            tickets.peek(&t, alice, "clock").as_deref(),
            Some("ui://clock/app.html"),
            "peeking spends nothing"
        );
        assert_eq!(
            tickets.redeem(&t, alice, "clock").as_deref(),
            Some("ui://clock/app.html")
        );
        assert_eq!(tickets.redeem(&t, alice, "clock"), None, "spent");

        let t = tickets.issue(alice, "clock", "ui://clock/app.html");
        assert_eq!(tickets.redeem(&t, bob, "clock"), None, "another person");
        assert_eq!(
            tickets.redeem(&t, alice, "clock"),
            None,
            "a wrong use spends it"
        );

        let t = tickets.issue(alice, "clock", "ui://clock/app.html");
        assert_eq!(tickets.redeem(&t, alice, "other"), None, "another server");
        assert_eq!(
            tickets.redeem("0123456789abcdef0123456789abcdef", alice, "clock"),
            None
        );
    }

    #[test]
    fn tickets_differ_and_the_store_stays_bounded() {
        let tickets = FrameTickets::default();
        let user = Uuid::new_v4();
        let a = tickets.issue(user, "s", "ui://s/a");
        let b = tickets.issue(user, "s", "ui://s/a");
        assert_ne!(a, b);
        for _ in 0..(MAX + 10) {
            tickets.issue(user, "s", "ui://s/a");
        }
        assert!(tickets.0.lock().unwrap().len() <= MAX);
    }
}
