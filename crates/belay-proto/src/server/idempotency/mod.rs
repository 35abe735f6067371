//! [`IdempotencyCache`]: at most one execution per idempotency key.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::message::{ErrorBody, Reply};
use crate::time::Instant;

mod shared;
pub use shared::{lost_attempt, SharedOutcome};

/// Default [`IdempotencyCache::in_flight_limit`].
pub const DEFAULT_IN_FLIGHT_LIMIT: Duration = Duration::from_secs(300);

/// What to do with a keyed request.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Begin {
    /// The key is new: execute, then [`IdempotencyCache::complete`] (or
    /// [`IdempotencyCache::abandon`] if the request is refused before it runs).
    /// The key is now in flight.
    New,
    /// An execution with this key is running: do not start another; answer
    /// this request with that execution's reply once it completes.
    InFlight,
    /// The key was executed: answer with this stored reply, do not run.
    Done(Reply),
    /// No room: every entry is in flight. Answer `rate_limited`; nothing was
    /// recorded.
    Full,
    /// The key is held (in flight or completed) for a request with other
    /// params: answer `bad_request`, never the other request's outcome.
    Conflict,
}

/// Bytes an entry costs beyond its key, scope and stored reply (map nodes,
/// indexes, bookkeeping), used for the byte budget.
pub const ENTRY_OVERHEAD: usize = 160;

/// Default [`IdempotencyCache::max_bytes`]: 64 MiB.
pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

/// A stable 64-bit digest of a request's params (FNV-1a over their
/// canonical JSON: object keys sorted), to tell a retry from another
/// request that reuses its key.
pub fn params_digest(params: &crate::message::Payload) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let text = serde_json::to_string(params).unwrap_or_default();
    for byte in text.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

type Key = (String, String);

#[derive(Debug, Clone, PartialEq)]
enum State {
    InFlight,
    /// The reply, as its JSON text (a parsed value takes several times the
    /// memory of its text).
    Done(Box<str>),
    /// The reply was larger than one entry may be: a retry is told so
    /// instead of running again.
    DoneTooLarge,
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    /// Position in `in_flight` or `done`, whichever matches `state`.
    seq: u64,
    /// When the current state began (begin or completion).
    since: Instant,
    /// Digest of the params of the request that took the key.
    digest: u64,
    /// What the entry counts against the byte budget.
    cost: usize,
    state: State,
}

/// Stored outcomes of keyed requests, bounded in time and in count.
///
/// A request that carries `idem` may be retried after `Timeout` or
/// `ConnectionClosed` without running twice (spec/PROTOCOL.md §4.4). The
/// server asks the cache before executing such a request:
///
/// ```text
///            begin ──▶ New ──▶ execute ──▶ complete(reply) ──▶ Done(reply) for
///              │        │                                       `retention`
///              │        └──▶ refused before running (unauthorized, …) ──▶ abandon
///              ├──▶ InFlight: the first execution is still running; answer
///              │    the retry with its outcome when it completes
///              ├──▶ Done(reply): answer with the stored outcome, do not run
///              └──▶ Full: every slot is in flight; answer `rate_limited`
/// ```
///
/// Keys are scoped by `scope`, the authenticated identity that sent them
/// (the server may fold the method in too, e.g. `"{user}\u{0}{method}"`), so
/// two users never share an outcome. Request ids are never used: they are per
/// client session.
///
/// Bounds: a completed entry expires `retention` after completion; an
/// in-flight entry expires `in_flight_limit` after it began (a generous
/// bound on how long a method may run, default 5 min: an execution that
/// outlives it may be started again by a retry). At most `max_entries` keys
/// are held. To make room, the oldest completed entry is evicted; in-flight
/// entries are never evicted (that would allow a second execution), so a
/// cache full of them refuses new keys with [`Begin::Full`].
///
/// Lookups use ordered maps, not hashing: keys come from clients, and the
/// crate uses no random source. Time is clamped: an instant earlier than one
/// already seen is treated as that instant.
#[derive(Debug, Clone, PartialEq)]
pub struct IdempotencyCache {
    retention: Duration,
    in_flight_limit: Duration,
    max_entries: usize,
    entries: BTreeMap<Key, Entry>,
    /// In-flight keys by sequence number, i.e. by begin time.
    in_flight: BTreeMap<u64, Key>,
    /// Completed keys by sequence number, i.e. by completion time.
    done: BTreeMap<u64, Key>,
    next_seq: u64,
    latest: Instant,
    max_bytes: usize,
    bytes: usize,
}

impl IdempotencyCache {
    /// A cache keeping outcomes for `retention` after completion, holding at
    /// most `max_entries` keys (at least 1). In-flight entries expire after
    /// [`DEFAULT_IN_FLIGHT_LIMIT`]; see [`set_in_flight_limit`](Self::set_in_flight_limit).
    pub fn new(retention: Duration, max_entries: usize) -> Self {
        IdempotencyCache {
            retention,
            in_flight_limit: DEFAULT_IN_FLIGHT_LIMIT,
            max_entries: max_entries.max(1),
            entries: BTreeMap::new(),
            in_flight: BTreeMap::new(),
            done: BTreeMap::new(),
            next_seq: 0,
            latest: Instant::ZERO,
            max_bytes: DEFAULT_MAX_BYTES,
            bytes: 0,
        }
    }

    /// Bound the bytes held (keys, scopes, stored replies and
    /// [`ENTRY_OVERHEAD`] per entry); the oldest completed entries are
    /// evicted to stay within it, and a reply larger than an eighth of it is
    /// not stored (a retry gets `too_large` instead of a second execution).
    pub fn set_max_bytes(&mut self, max_bytes: usize) -> &mut Self {
        self.max_bytes = max_bytes;
        self
    }

    /// The byte budget.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes held now, as counted against [`max_bytes`](Self::max_bytes).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How long an execution may stay in flight before its key is forgotten.
    /// Set it above the longest time a method may run, or a retry after it
    /// would run the method a second time.
    pub fn set_in_flight_limit(&mut self, limit: Duration) -> &mut Self {
        self.in_flight_limit = limit;
        self
    }

    /// How long a completed outcome is kept.
    pub fn retention(&self) -> Duration {
        self.retention
    }

    /// How long an execution may stay in flight.
    pub fn in_flight_limit(&self) -> Duration {
        self.in_flight_limit
    }

    /// The most keys held at once.
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// A keyed request whose params have digest `digest` (see
    /// [`params_digest`]) arrived at `now`: decide whether to run it.
    pub fn begin(&mut self, now: Instant, scope: &str, key: &str, digest: u64) -> Begin {
        let now = self.expire(now);
        let id = (scope.to_owned(), key.to_owned());
        if let Some(entry) = self.entries.get(&id) {
            if entry.digest != digest {
                return Begin::Conflict;
            }
            return match &entry.state {
                State::InFlight => Begin::InFlight,
                State::Done(text) => Begin::Done(stored_reply(text)),
                State::DoneTooLarge => Begin::Done(too_large()),
            };
        }
        let cost = scope.len() + key.len() + ENTRY_OVERHEAD;
        if !self.make_room(cost) {
            return Begin::Full;
        }
        let seq = self.take_seq();
        self.in_flight.insert(seq, id.clone());
        self.bytes += cost;
        self.entries.insert(
            id,
            Entry {
                seq,
                since: now,
                digest,
                cost,
                state: State::InFlight,
            },
        );
        Begin::New
    }

    /// The execution for `key` finished at `now` with `reply` (a result or a
    /// method error). The reply is kept for `retention`.
    ///
    /// If the key is already completed, the first stored reply wins (a retry
    /// that slipped in after the in-flight entry expired must not change the
    /// answer others were given). If the key is unknown (its in-flight entry
    /// expired) the reply is stored when there is room, evicting the oldest
    /// completed entry if needed, and dropped otherwise.
    pub fn complete(&mut self, now: Instant, scope: &str, key: &str, reply: &Reply) {
        let now = self.expire(now);
        let id = (scope.to_owned(), key.to_owned());
        let digest = match self.entries.get(&id) {
            Some(entry) if entry.state != State::InFlight => return,
            Some(entry) => {
                let (seq, digest) = (entry.seq, entry.digest);
                self.in_flight.remove(&seq);
                self.remove(&id);
                digest
            }
            None => 0,
        };
        let text = serde_json::to_string(reply).unwrap_or_default();
        let base = scope.len() + key.len() + ENTRY_OVERHEAD;
        let (state, cost) = if text.len() > self.max_bytes / 8 {
            (State::DoneTooLarge, base)
        } else {
            let cost = base + text.len();
            (State::Done(text.into_boxed_str()), cost)
        };
        if !self.make_room(cost) {
            return;
        }
        let seq = self.take_seq();
        self.done.insert(seq, id.clone());
        self.bytes += cost;
        self.entries.insert(
            id,
            Entry {
                seq,
                since: now,
                digest,
                cost,
                state,
            },
        );
    }

    /// The request for `key` was refused before it ran (`bad_request`,
    /// `unauthorized`, `forbidden`, `rate_limited`, …): forget the in-flight
    /// entry so a retry is evaluated afresh. A completed entry is kept.
    pub fn abandon(&mut self, scope: &str, key: &str) {
        let id = (scope.to_owned(), key.to_owned());
        if let Some(Entry {
            state: State::InFlight,
            seq,
            ..
        }) = self.entries.get(&id)
        {
            self.in_flight.remove(seq);
            self.remove(&id);
        }
    }

    /// Forget `id`'s entry (its index position is the caller's business).
    fn remove(&mut self, id: &Key) {
        if let Some(entry) = self.entries.remove(id) {
            self.bytes = self.bytes.saturating_sub(entry.cost);
        }
    }

    /// Drop expired entries at `now`. [`begin`](Self::begin) and
    /// [`complete`](Self::complete) prune too; call this from a timer at
    /// [`poll_timeout`](Self::poll_timeout) to release memory when idle.
    pub fn prune(&mut self, now: Instant) {
        self.expire(now);
    }

    /// Prune at `now` and return it, clamped to the latest instant seen.
    fn expire(&mut self, now: Instant) -> Instant {
        self.latest = self.latest.max(now);
        let now = self.latest;
        // Both indexes are in time order (time is clamped and each limit is
        // fixed), so expired entries are always at the front.
        while let Some((&seq, id)) = self.done.first_key_value() {
            let expired = self.entries.get(id).map_or(true, |entry| {
                now.saturating_duration_since(entry.since) >= self.retention
            });
            if !expired {
                break;
            }
            if let Some(id) = self.done.remove(&seq) {
                self.remove(&id);
            }
        }
        while let Some((&seq, id)) = self.in_flight.first_key_value() {
            let expired = self.entries.get(id).map_or(true, |entry| {
                now.saturating_duration_since(entry.since) >= self.in_flight_limit
            });
            if !expired {
                break;
            }
            if let Some(id) = self.in_flight.remove(&seq) {
                self.remove(&id);
            }
        }
        now
    }

    /// The next instant at which an entry expires, if any is held.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let first = |index: &BTreeMap<u64, Key>, keep: Duration| {
            index
                .first_key_value()
                .and_then(|(_, id)| self.entries.get(id))
                .map(|entry| entry.since.saturating_add(keep))
        };
        match (
            first(&self.done, self.retention),
            first(&self.in_flight, self.in_flight_limit),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Keys held (in flight and completed).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keys whose execution is still running.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Ensure there is room for one more entry costing `cost` bytes,
    /// evicting the oldest completed ones if needed. `false` if what is left
    /// is in flight.
    fn make_room(&mut self, cost: usize) -> bool {
        while self.entries.len() >= self.max_entries
            || self.bytes.saturating_add(cost) > self.max_bytes
        {
            match self.done.pop_first() {
                Some((_, id)) => self.remove(&id),
                None => return false,
            }
        }
        true
    }

    fn take_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.saturating_add(1);
        seq
    }
}

/// A stored reply, parsed back.
fn stored_reply(text: &str) -> Reply {
    serde_json::from_str(text)
        .unwrap_or_else(|_| Reply::Error(ErrorBody::new("internal", "stored reply unreadable")))
}

fn too_large() -> Reply {
    Reply::Error(ErrorBody::new(
        "too_large",
        "the result of the first execution was too large to keep",
    ))
}

#[cfg(test)]
mod tests;
