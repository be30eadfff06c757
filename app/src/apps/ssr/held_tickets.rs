//! The frame tickets an instance issued and no load has spent (`tickets`): the memory only
//! the issuing instance decides from, each person's bounded.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use uuid::Uuid;

/// The tickets an instance issued and no load has spent, each person's in the order issued.
#[derive(Default)]
pub struct Held(Mutex<HeldTickets>);

#[derive(Default)]
struct HeldTickets {
    unspent: HashMap<[u8; 16], Uuid>,
    /// Each person's nonces and expiries, oldest first; a spent one leaves at the person's
    /// next ticket or the next prune.
    by_person: HashMap<Uuid, VecDeque<([u8; 16], i64)>>,
}

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, HeldTickets> {
        // Every change under the lock is a whole insert or remove: a panic elsewhere while
        // it was held leaves nothing half done.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds `nonce` for `person` until `expires_at`; returns how many of their older
    /// tickets this voided to keep them at `per_person`.
    pub(super) fn hold(
        &self,
        person: Uuid,
        nonce: [u8; 16],
        expires_at: i64,
        per_person: usize,
    ) -> usize {
        let mut held = self.lock();
        let HeldTickets { unspent, by_person } = &mut *held;
        let queue = by_person.entry(person).or_default();
        // Spent tickets leave only when the person is at their bound (or at the next
        // prune): one pass per full queue, not one per ticket issued.
        if queue.len() >= per_person {
            queue.retain(|(n, _)| unspent.contains_key(n));
        }
        let mut voided = 0;
        while queue.len() >= per_person {
            if let Some((oldest, _)) = queue.pop_front() {
                unspent.remove(&oldest);
                voided += 1;
            }
        }
        queue.push_back((nonce, expires_at));
        unspent.insert(nonce, person);
        voided
    }

    /// Takes the ticket `nonce`: `true` once, for the first caller, if it is held here.
    pub fn take(&self, nonce: &[u8; 16]) -> bool {
        self.lock().unspent.remove(nonce).is_some()
    }

    /// Forgets what expired by `now`; returns how many of those were unspent.
    pub(super) fn prune(&self, now: i64) -> usize {
        let mut held = self.lock();
        let HeldTickets { unspent, by_person } = &mut *held;
        let mut pruned = 0;
        by_person.retain(|_, queue| {
            queue.retain(|(nonce, expires_at)| {
                if !unspent.contains_key(nonce) {
                    return false;
                }
                if *expires_at <= now {
                    unspent.remove(nonce);
                    pruned += 1;
                    return false;
                }
                true
            });
            !queue.is_empty()
        });
        pruned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unspent_tickets_count_against_the_bound() {
        let held = Held::default();
        let person = Uuid::new_v4();
        assert_eq!(held.hold(person, [1; 16], 100, 2), 0);
        assert_eq!(held.hold(person, [2; 16], 100, 2), 0);
        assert!(held.take(&[1; 16]));
        assert_eq!(
            held.hold(person, [3; 16], 100, 2),
            0,
            "the spent one made room"
        );
        assert_eq!(
            held.hold(person, [4; 16], 100, 2),
            1,
            "the oldest unspent is voided"
        );
        assert!(!held.take(&[2; 16]), "voided");
        assert!(held.take(&[3; 16]) && held.take(&[4; 16]));
    }

    #[test]
    fn expired_tickets_are_forgotten() {
        let held = Held::default();
        let person = Uuid::new_v4();
        held.hold(person, [1; 16], 100, 8);
        held.hold(person, [2; 16], 200, 8);
        held.hold(person, [3; 16], 300, 8);
        assert!(held.take(&[3; 16]));
        assert_eq!(held.prune(200), 2, "two expired by 200, unspent");
        assert!(!held.take(&[1; 16]) && !held.take(&[2; 16]));
        assert!(
            held.lock().by_person.is_empty(),
            "nothing left of the person"
        );
    }
}
