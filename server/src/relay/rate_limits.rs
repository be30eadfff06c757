//! `/mcp`'s rate limits: a token bucket per person, so a person's budget is the same however
//! many login tokens they mint.
//!
//! A bucket that has refilled is the same as no bucket (a new one starts full), so only full
//! buckets are ever dropped: forgetting one never gives anyone more than their burst. Each
//! check looks at a few of the oldest buckets and drops the full ones, so the table holds
//! only the people who used `/mcp` within about one refill, and no check scans it.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use uuid::Uuid;

/// Buckets looked at for dropping per check: more than the one a check may add, so the
/// sweep outpaces the table's growth.
const SWEEP_PER_CHECK: usize = 2;

/// A token bucket per person: `rate` a second on average, bursts of `burst`, shared out
/// among the live instances (`instances::Live`).
pub struct RateLimits {
    rate: f64,
    burst: f64,
    instances: crate::instances::Live,
    buckets: Mutex<Buckets>,
}

#[derive(Default)]
struct Buckets {
    by_person: HashMap<Uuid, Bucket>,
    /// The people of `by_person`, each once, in the order the sweep visits them.
    sweep: VecDeque<Uuid>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// The tokens at `now`.
    fn level(&self, now: Instant, rate: f64, burst: f64) -> f64 {
        let earned = now.saturating_duration_since(self.at).as_secs_f64() * rate;
        (self.tokens + earned).min(burst)
    }
}

impl RateLimits {
    /// `rate` requests a second, bursts of twice that.
    pub fn new(rate: u32) -> Self {
        Self::with(f64::from(rate), 2.0 * f64::from(rate))
    }

    /// `count` a second, bursts of `count` (no more than `count` at once, as `new` allows
    /// twice that).
    pub fn per_second(count: u32) -> Self {
        Self::with(f64::from(count), f64::from(count))
    }

    /// `count` a minute, bursts of `count`. New client sessions are limited so: each opens
    /// upstream sessions of its own, which live until the client ends it or it has been idle
    /// for five minutes, so this bounds how many one person holds open upstream.
    pub fn per_minute(count: u32) -> Self {
        Self::with(f64::from(count) / 60.0, f64::from(count))
    }

    fn with(rate: f64, burst: f64) -> Self {
        Self {
            rate,
            burst,
            instances: crate::instances::Live::default(),
            buckets: Mutex::default(),
        }
    }

    /// The same limits, this instance's share of them: divided by the live instances.
    pub fn shared(mut self, instances: &crate::instances::Live) -> Self {
        self.instances = instances.clone();
        self
    }

    /// This instance's rate and burst (a burst of at least one, so a person is never
    /// refused everything).
    fn share(&self) -> (f64, f64) {
        let n = f64::from(self.instances.count());
        (self.rate / n, (self.burst / n).max(1.0))
    }

    /// Whether `person` may make one more request now (and counts it when so).
    pub fn allow(&self, person: Uuid) -> bool {
        self.allow_at(person, Instant::now())
    }

    fn allow_at(&self, person: Uuid, now: Instant) -> bool {
        let (rate, burst) = self.share();
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let Buckets { by_person, sweep } = &mut *buckets;
        for _ in 0..SWEEP_PER_CHECK.min(sweep.len()) {
            let Some(oldest) = sweep.pop_front() else {
                break;
            };
            let full = by_person
                .get(&oldest)
                .is_none_or(|bucket| bucket.level(now, rate, burst) >= burst);
            if full {
                by_person.remove(&oldest);
            } else {
                sweep.push_back(oldest);
            }
        }
        let bucket = match by_person.entry(person) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                sweep.push_back(person);
                entry.insert(Bucket {
                    tokens: burst,
                    at: now,
                })
            }
        };
        bucket.tokens = bucket.level(now, rate, burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    #[cfg(test)]
    fn held(&self) -> usize {
        let buckets = self.buckets.lock().unwrap();
        assert_eq!(buckets.by_person.len(), buckets.sweep.len());
        buckets.by_person.len()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_rate_limit_allows_a_burst_then_refuses() {
        let limits = RateLimits::new(50);
        let person = Uuid::new_v4();
        let allowed = (0..200).filter(|_| limits.allow(person)).count();
        assert!((100..=110).contains(&allowed), "{allowed}");
        assert!(
            limits.allow(Uuid::new_v4()),
            "another person has their own bucket"
        );
        let sessions = RateLimits::per_minute(10);
        let allowed = (0..50).filter(|_| sessions.allow(person)).count();
        assert_eq!(allowed, 10);
        let lines = RateLimits::per_second(10);
        let allowed = (0..50).filter(|_| lines.allow(person)).count();
        assert!((10..=11).contains(&allowed), "{allowed}");
    }

    #[test]
    fn a_flood_of_other_keys_resets_no_ones_budget() {
        // One token a thousand seconds: nobody's bucket refills during the test.
        let limits = RateLimits::with(0.001, 2.0);
        let spent = Uuid::new_v4();
        assert!(limits.allow(spent) && limits.allow(spent));
        assert!(!limits.allow(spent));
        for _ in 0..150_000 {
            limits.allow(Uuid::new_v4());
        }
        assert!(!limits.allow(spent), "the spent budget was reset");
    }

    #[test]
    fn only_buckets_full_again_are_dropped_a_few_at_a_time() {
        let limits = RateLimits::with(1.0, 2.0);
        let start = Instant::now();
        let spent = Uuid::new_v4();
        assert!(limits.allow_at(spent, start) && limits.allow_at(spent, start));
        let others: Vec<Uuid> = (0..1000).map(|_| Uuid::new_v4()).collect();
        for other in &others {
            assert!(limits.allow_at(*other, start));
        }
        assert_eq!(limits.held(), 1001);

        // 1.5 s on, the others (one token left, one earned back) are full; the spent one
        // has earned 1.5 of its 2.
        let later = start + Duration::from_millis(1500);
        let caller = Uuid::new_v4();
        limits.allow_at(caller, later);
        assert!(
            limits.held() >= 1001 + 1 - SWEEP_PER_CHECK,
            "one check drops at most {SWEEP_PER_CHECK}"
        );
        for _ in 0..1000 {
            limits.allow_at(caller, later);
        }
        assert_eq!(
            limits.held(),
            2,
            "the spent bucket and the caller's are kept"
        );
        assert!(limits.allow_at(spent, later), "1.5 tokens earned back");
        assert!(!limits.allow_at(spent, later), "and no more");
    }
}
