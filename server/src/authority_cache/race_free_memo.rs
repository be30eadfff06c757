//! One memo: values by key, stored only by a read that began after the key (or everything)
//! was last forgotten, and used only while fresh.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Entries one memo holds at most; past that it starts over.
const MAX_ENTRIES: usize = 100_000;

/// What every memo shares: whether announcements are heard, and the generation, which
/// forgetting everything moves on.
#[derive(Debug)]
pub(super) struct Epoch {
    pub(super) generation: AtomicU64,
    pub(super) live: AtomicBool,
    pub(super) fresh_for: Duration,
}

/// A read in progress for one key: stored only if nothing was forgotten since it began.
#[derive(Clone, Copy, Debug)]
pub struct Ticket {
    generation: u64,
    number: u64,
}

/// One key: reads that began since `since` (the first ticket taken after the key was last
/// forgotten, in `since`'s generation) may store, and a stored value is replaced only by a
/// read that began after the one that stored it.
#[derive(Debug)]
struct Slot<V> {
    since: Ticket,
    value: Option<(Instant, u64, V)>,
}

/// Values by key, each stored by a read that began after the key was last forgotten.
#[derive(Debug)]
pub struct Memo<K, V> {
    epoch: Arc<Epoch>,
    tickets: AtomicU64,
    slots: Mutex<HashMap<K, Slot<V>>>,
}

impl<K: Hash + Eq + Clone, V: Clone> Memo<K, V> {
    pub(super) fn new(epoch: Arc<Epoch>) -> Self {
        Self {
            epoch,
            tickets: AtomicU64::new(0),
            slots: Mutex::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<K, Slot<V>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The value remembered for `key`, while fresh and of this generation.
    pub fn get(&self, key: &K) -> Option<V> {
        if !self.epoch.live.load(Ordering::Acquire) {
            return None;
        }
        let generation = self.epoch.generation.load(Ordering::Acquire);
        let slots = self.lock();
        let slot = slots.get(key)?;
        let (at, _, value) = slot.value.as_ref()?;
        (slot.since.generation == generation && at.elapsed() < self.epoch.fresh_for)
            .then(|| value.clone())
    }

    /// Starts a read of `key`; `None` while announcements are not heard (nothing is stored).
    pub fn begin(&self, key: &K) -> Option<Ticket> {
        if !self.epoch.live.load(Ordering::Acquire) {
            return None;
        }
        let ticket = Ticket {
            generation: self.epoch.generation.load(Ordering::Acquire),
            number: self.tickets.fetch_add(1, Ordering::Relaxed),
        };
        let mut slots = self.lock();
        match slots.get(key) {
            // Reads of this key began in this generation and nothing was forgotten since:
            // this one joins them.
            Some(slot) if slot.since.generation == ticket.generation => {}
            _ => {
                if slots.len() >= MAX_ENTRIES {
                    slots.clear();
                }
                let slot = Slot {
                    since: ticket,
                    value: None,
                };
                slots.insert(key.clone(), slot);
            }
        }
        Some(ticket)
    }

    /// Stores what the read of `ticket` found, unless `key` or everything was forgotten
    /// since it began, or what is stored was read by a read that began after it.
    pub fn finish(&self, key: &K, ticket: Ticket, value: V) {
        let mut slots = self.lock();
        if let Some(slot) = slots.get_mut(key)
            && ticket.generation == slot.since.generation
            && ticket.number >= slot.since.number
            && ticket.generation == self.epoch.generation.load(Ordering::Acquire)
            && slot
                .value
                .as_ref()
                .is_none_or(|(_, stored_by, _)| *stored_by < ticket.number)
        {
            slot.value = Some((Instant::now(), ticket.number, value));
        }
    }

    pub fn forget(&self, key: &K) {
        self.lock().remove(key);
    }

    /// The remembered value of `key`, or what `read` reads, stored when `keep` says so.
    pub async fn get_or_read<E>(
        &self,
        key: K,
        keep: impl Fn(&V) -> bool,
        read: impl Future<Output = Result<V, E>>,
    ) -> Result<V, E> {
        self.get_or_read_while(key, |_| true, keep, read).await
    }

    /// `get_or_read`, using a remembered value only while `usable` holds for it (a session
    /// or a token until its expiry).
    pub async fn get_or_read_while<E>(
        &self,
        key: K,
        usable: impl Fn(&V) -> bool,
        keep: impl Fn(&V) -> bool,
        read: impl Future<Output = Result<V, E>>,
    ) -> Result<V, E> {
        if let Some(value) = self.get(&key).filter(|value| usable(value)) {
            return Ok(value);
        }
        let ticket = self.begin(&key);
        let value = read.await?;
        if let Some(ticket) = ticket
            && keep(&value)
        {
            self.finish(&key, ticket, value.clone());
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memo(fresh_for: Duration) -> Memo<&'static str, u32> {
        let epoch = Arc::new(Epoch {
            generation: AtomicU64::new(0),
            live: AtomicBool::new(true),
            fresh_for,
        });
        Memo::new(epoch)
    }

    #[test]
    fn a_finished_read_is_remembered_until_forgotten() {
        let memo = memo(Duration::from_secs(60));
        let ticket = memo.begin(&"a").unwrap();
        memo.finish(&"a", ticket, 1);
        assert_eq!(memo.get(&"a"), Some(1));
        memo.forget(&"a");
        assert_eq!(memo.get(&"a"), None);
    }

    #[test]
    fn forgetting_everything_voids_what_is_remembered_and_reads_in_progress() {
        let memo = memo(Duration::from_secs(60));
        let ticket = memo.begin(&"a").unwrap();
        memo.finish(&"a", ticket, 1);
        let racing = memo.begin(&"b").unwrap();
        memo.epoch.generation.fetch_add(1, Ordering::AcqRel);
        assert_eq!(memo.get(&"a"), None);
        memo.finish(&"b", racing, 2);
        assert_eq!(
            memo.get(&"b"),
            None,
            "read before the change, stored after it"
        );
    }

    #[test]
    fn a_read_that_raced_forgetting_its_key_is_not_stored() {
        let memo = memo(Duration::from_secs(60));
        let racing = memo.begin(&"a").unwrap();
        memo.forget(&"a");
        memo.finish(&"a", racing, 1);
        assert_eq!(memo.get(&"a"), None);
        // Forgetting between two reads voids the first, whenever it finishes.
        let before = memo.begin(&"a").unwrap();
        memo.forget(&"a");
        let after = memo.begin(&"a").unwrap();
        memo.finish(&"a", before, 1);
        assert_eq!(memo.get(&"a"), None);
        memo.finish(&"a", after, 2);
        assert_eq!(memo.get(&"a"), Some(2));
    }

    /// When an entry expires under many callers, their reads overlap: each new read must not
    /// void the ones in flight, or under a steady stream of calls nothing is ever stored.
    #[test]
    fn overlapping_reads_store_the_first_to_finish_and_never_an_older_read() {
        let memo = memo(Duration::from_secs(60));
        let first = memo.begin(&"a").unwrap();
        let second = memo.begin(&"a").unwrap();
        memo.finish(&"a", first, 1);
        assert_eq!(memo.get(&"a"), Some(1), "stored though a later read began");
        memo.finish(&"a", second, 2);
        assert_eq!(memo.get(&"a"), Some(2), "a later read replaces it");
        let older = memo.begin(&"a").unwrap();
        let newer = memo.begin(&"a").unwrap();
        memo.finish(&"a", newer, 4);
        memo.finish(&"a", older, 3);
        assert_eq!(
            memo.get(&"a"),
            Some(4),
            "an older read never replaces a newer one"
        );
        // A steady stream: every read overlaps the next, and each one's value is stored.
        let mut in_flight = memo.begin(&"b").unwrap();
        for n in 0..10 {
            let next = memo.begin(&"b").unwrap();
            memo.finish(&"b", in_flight, n);
            assert_eq!(memo.get(&"b"), Some(n));
            in_flight = next;
        }
    }

    #[test]
    fn nothing_is_remembered_while_changes_are_not_heard() {
        let memo = memo(Duration::from_secs(60));
        let ticket = memo.begin(&"a").unwrap();
        memo.finish(&"a", ticket, 1);
        memo.epoch.live.store(false, Ordering::Release);
        assert_eq!(memo.get(&"a"), None);
        assert!(memo.begin(&"a").is_none());
    }

    #[test]
    fn an_entry_is_used_only_while_fresh() {
        let memo = memo(Duration::from_millis(20));
        let ticket = memo.begin(&"a").unwrap();
        memo.finish(&"a", ticket, 1);
        assert_eq!(memo.get(&"a"), Some(1));
        std::thread::sleep(Duration::from_millis(25));
        assert_eq!(memo.get(&"a"), None);
    }
}
