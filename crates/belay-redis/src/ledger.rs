//! [`Ledger`]: the bytes of idempotent outcomes one node has written to
//! Redis and not seen expire, so the node's share of Redis stays bounded
//! in bytes like its own cache: past the budget, its oldest outcomes are
//! deleted before their retention ends (a retry of one of those runs
//! again, as after a local eviction).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Bytes an outcome costs in Redis beyond its key and value (the key
/// object, its expiry entry, allocator rounding).
pub(crate) const KEY_OVERHEAD: usize = 96;

#[derive(Debug)]
struct Written {
    expires: Instant,
    key: String,
    cost: usize,
}

/// Outcomes written, oldest first; all share one retention, so expiry
/// order is write order.
#[derive(Debug)]
pub(crate) struct Ledger {
    max_bytes: usize,
    bytes: usize,
    written: VecDeque<Written>,
}

impl Ledger {
    pub(crate) fn new(max_bytes: usize) -> Self {
        Ledger {
            max_bytes,
            bytes: 0,
            written: VecDeque::new(),
        }
    }

    /// Bytes counted now.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Count an outcome of `value_len` bytes under `key`, written at `now`
    /// and kept for `retention`. Returns the keys to delete so the total
    /// stays within the budget (the oldest, still unexpired).
    pub(crate) fn record(
        &mut self,
        now: Instant,
        key: String,
        value_len: usize,
        retention: Duration,
    ) -> Vec<String> {
        self.expire(now);
        let cost = key.len() + value_len + KEY_OVERHEAD;
        let mut evicted = Vec::new();
        while self.bytes + cost > self.max_bytes {
            let Some(oldest) = self.written.pop_front() else {
                break;
            };
            self.bytes -= oldest.cost;
            evicted.push(oldest.key);
        }
        self.bytes += cost;
        self.written.push_back(Written {
            expires: now + retention,
            key,
            cost,
        });
        evicted
    }

    fn expire(&mut self, now: Instant) {
        while self.written.front().is_some_and(|w| w.expires <= now) {
            if let Some(gone) = self.written.pop_front() {
                self.bytes -= gone.cost;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn outcomes_within_the_budget_are_all_kept() {
        let now = Instant::now();
        let mut ledger = Ledger::new(10_000);
        assert!(ledger.record(now, "a".into(), 100, MINUTE).is_empty());
        assert!(ledger.record(now, "b".into(), 100, MINUTE).is_empty());
        assert_eq!(ledger.bytes(), 2 * (1 + 100 + KEY_OVERHEAD));
    }

    #[test]
    fn past_the_budget_the_oldest_outcomes_are_deleted() {
        let now = Instant::now();
        let mut ledger = Ledger::new(3 * (1 + 500 + KEY_OVERHEAD));
        for key in ["a", "b", "c"] {
            assert!(ledger.record(now, key.into(), 500, MINUTE).is_empty());
        }
        assert_eq!(ledger.record(now, "d".into(), 500, MINUTE), ["a"]);
        assert_eq!(ledger.record(now, "e".into(), 1_000, MINUTE), ["b", "c"]);
        assert!(ledger.bytes() <= 3 * (1 + 500 + KEY_OVERHEAD));
    }

    #[test]
    fn expired_outcomes_stop_counting_without_a_delete() {
        let now = Instant::now();
        let mut ledger = Ledger::new(2 * (1 + 500 + KEY_OVERHEAD));
        ledger.record(now, "a".into(), 500, MINUTE);
        ledger.record(now, "b".into(), 500, MINUTE);
        let later = now + MINUTE;
        assert!(ledger.record(later, "c".into(), 500, MINUTE).is_empty());
        assert_eq!(ledger.bytes(), 1 + 500 + KEY_OVERHEAD);
    }
}
