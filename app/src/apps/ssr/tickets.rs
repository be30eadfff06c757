//! Frame tickets: the app session a frame load is bound to (SPEC §6). The console issues one
//! each time it opens an app for a person; the frame route accepts it once, for that person
//! and that server, within a few minutes, and serves the resource the ticket names. A page
//! cannot make one: it never sees the console's pages, and the ticket in its own address is
//! spent — a reload, a `location = …` or a forged ticket gets an inert document.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use uuid::Uuid;

/// How long an issued ticket waits for its frame to load.
const TTL: Duration = Duration::from_secs(300);
/// Tickets held at once, all people together; past it, the oldest go.
const MAX: usize = 100_000;
/// Tickets one person holds at once (a console tab holds one per open app); past it, that
/// person's oldest go, so one person opening apps in a loop cannot crowd out everyone else's.
const PER_PERSON: usize = 32;

struct Ticket {
    user: Uuid,
    slug: String,
    uri: String,
    issued: Instant,
}

/// The live tickets, and each person's and everyone's in the order they were issued: the
/// oldest are found at the front, never by scanning the whole store. (A spent ticket's id
/// stays in the queues until it reaches the front, where it is skipped.)
#[derive(Default)]
struct Held {
    tickets: HashMap<String, Ticket>,
    issued: VecDeque<String>,
    by_person: HashMap<Uuid, VecDeque<String>>,
}

impl Held {
    fn insert(&mut self, id: String, ticket: Ticket) {
        let user = ticket.user;
        let mine = self.by_person.entry(user).or_default();
        mine.push_back(id.clone());
        while mine.len() > PER_PERSON {
            if let Some(oldest) = mine.pop_front() {
                self.tickets.remove(&oldest);
            }
        }
        self.issued.push_back(id.clone());
        self.tickets.insert(id, ticket);
        while self.tickets.len() > MAX || self.issued.len() > 2 * MAX {
            let Some(oldest) = self.issued.pop_front() else {
                break;
            };
            if let Some(gone) = self.tickets.remove(&oldest) {
                self.forget_of(gone.user, &oldest);
            }
        }
        // Expired and spent ids at the front of everyone's queue go as they are passed.
        while let Some(front) = self.issued.front() {
            match self.tickets.get(front) {
                Some(t) if t.issued.elapsed() < TTL => break,
                _ => {
                    let front = self.issued.pop_front().unwrap_or_default();
                    if let Some(gone) = self.tickets.remove(&front) {
                        self.forget_of(gone.user, &front);
                    }
                }
            }
        }
    }

    fn remove(&mut self, id: &str) -> Option<Ticket> {
        let ticket = self.tickets.remove(id)?;
        self.forget_of(ticket.user, id);
        Some(ticket)
    }

    /// Takes `id` out of `user`'s queue (a person's queue is at most `PER_PERSON` long).
    fn forget_of(&mut self, user: Uuid, id: &str) {
        if let Some(mine) = self.by_person.get_mut(&user) {
            mine.retain(|t| t != id);
            if mine.is_empty() {
                self.by_person.remove(&user);
            }
        }
    }
}

#[derive(Default)]
pub struct FrameTickets(Mutex<Held>);

impl FrameTickets {
    /// A fresh ticket (128 random bits, hex) for `user` to load `uri` of `slug` once.
    pub fn issue(&self, user: Uuid, slug: &str, uri: &str) -> String {
        let ticket = format!("{:032x}", rand::random::<u128>());
        let mut held = self.0.lock().unwrap_or_else(|p| p.into_inner());
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
        let held = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let found = held.tickets.get(ticket)?;
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
        for i in 0..(MAX + 10) {
            // Many people, so the store's own bound is what holds.
            tickets.issue(Uuid::from_u128(i as u128), "s", "ui://s/a");
        }
        let held = tickets.0.lock().unwrap();
        assert!(held.tickets.len() <= MAX);
        assert!(held.issued.len() <= 2 * MAX);
    }

    #[test]
    fn a_person_holds_a_bounded_number_and_loses_their_oldest_first() {
        let tickets = FrameTickets::default();
        let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
        let bobs = tickets.issue(bob, "s", "ui://s/b");
        let first = tickets.issue(alice, "s", "ui://s/a");
        let mut last = String::new();
        for _ in 0..PER_PERSON {
            last = tickets.issue(alice, "s", "ui://s/a");
        }
        assert_eq!(
            tickets.peek(&first, alice, "s"),
            None,
            "alice's oldest went"
        );
        assert!(tickets.peek(&last, alice, "s").is_some());
        assert!(
            tickets.peek(&bobs, bob, "s").is_some(),
            "bob's is untouched"
        );
        let held = tickets.0.lock().unwrap();
        assert_eq!(held.by_person[&alice].len(), PER_PERSON);
    }
}
