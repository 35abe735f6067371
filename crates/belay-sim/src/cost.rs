//! The server's work: every attempt costs CPU from one budget.
//!
//! The default server model decides an attempt at the instant it arrives,
//! and a refusal costs nothing (or a share of the bucket, `reject_cost`).
//! A real server pays for every attempt that reaches its process: the TCP
//! accept, the TLS handshake, reading and checking the upgrade request —
//! and only then does it know whether admission lets the client in. An
//! admitted session costs more (the upgrade, `welcome`, the session's
//! state). With a [`CostModel`] the server has `workers` CPUs doing that
//! work one attempt at a time, in arrival order:
//!
//! ```text
//!  attempt ──▶ listen backlog (at most `backlog` waiting; beyond it the
//!              │               SYN is dropped and sent again 1, 3, 7 s later)
//!              ▼
//!           a free worker: `handshake` of work, then the admission decision
//!              │   (belay-proto's UpgradeDecision and TokenBucket, as in
//!              │    belay-server's upgrade), then `session` more if admitted
//!              ▼
//!           the answer reaches the client: 101 (open) or 503 + Retry-After
//! ```
//!
//! A client gives up on an attempt after its connect timeout (the session's
//! own deadline); the server does not know and still does the attempt's
//! work when its turn comes, and an admission it makes for a client that is
//! gone is wasted. When attempts arrive faster than the workers finish
//! them, the wait grows past the connect timeout and every answer comes too
//! late: the server is busy all the time and connects nobody, while the
//! clients' retries keep the queue full — the metastable state of a herd
//! (MISSION §7: "refusals cost the server TLS and rejections").

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use belay_proto::Instant;

/// What every attempt costs the server, and how much CPU it has.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct CostModel {
    /// CPUs doing connection work (at least 1).
    pub workers: u32,
    /// Work for every attempt that reaches the process, admitted or not:
    /// accept, TLS handshake, the upgrade request and the admission check.
    pub handshake: Duration,
    /// Extra work for an admitted attempt: the upgrade and the session's
    /// setup up to `welcome`.
    pub session: Duration,
    /// Attempts that may wait for a worker (the listen backlog); one more
    /// is dropped, and the client's TCP stack sends its SYN again 1 s, then
    /// 2 s, 4 s… later, until its connect timeout.
    pub backlog: usize,
}

impl CostModel {
    /// One worker, 1 ms per handshake (about a TLS 1.3 handshake with an
    /// ECDSA P-256 certificate on one core), 0.5 ms more per admitted
    /// session, Linux's default listen backlog (`somaxconn` 4,096).
    pub fn new() -> Self {
        CostModel {
            workers: 1,
            handshake: Duration::from_millis(1),
            session: Duration::from_micros(500),
            backlog: 4096,
        }
    }

    /// Attempts per second the workers can decide when every one is refused:
    /// `workers / handshake`.
    pub fn refusal_capacity(&self) -> f64 {
        f64::from(self.workers.max(1)) / self.handshake.as_secs_f64().max(1e-9)
    }
}

impl Default for CostModel {
    fn default() -> Self {
        Self::new()
    }
}

/// When one attempt is decided and when its work ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    /// The admission decision: after the handshake's work.
    pub(crate) decided_at: Instant,
    /// Whether the attempt waited for a worker at all.
    pub(crate) queued: bool,
}

/// The server's workers and its listen backlog: a first-come first-served
/// queue in front of `workers` identical CPUs.
#[derive(Debug, Clone)]
pub(crate) struct Workers {
    model: CostModel,
    /// When each worker is next free.
    free_at: BinaryHeap<Reverse<Instant>>,
    /// Start instants of the attempts still waiting, in order (starts never
    /// go down: the queue is served in arrival order).
    waiting: VecDeque<Instant>,
    /// Work done so far.
    pub(crate) busy: Duration,
}

impl Workers {
    pub(crate) fn new(model: CostModel, from: Instant) -> Self {
        let workers = model.workers.max(1) as usize;
        Workers {
            model,
            free_at: (0..workers).map(|_| Reverse(from)).collect(),
            waiting: VecDeque::new(),
            busy: Duration::ZERO,
        }
    }

    /// An attempt reaches the listen socket at `now`: `None` if the backlog
    /// is full (dropped), else when its handshake ends and it is decided.
    /// The worker stays reserved until [`finish`](Self::finish) says how
    /// long the rest takes.
    pub(crate) fn arrive(&mut self, now: Instant) -> Option<Slot> {
        while self.waiting.front().is_some_and(|&start| start <= now) {
            self.waiting.pop_front();
        }
        if self.waiting.len() >= self.model.backlog {
            return None;
        }
        let Reverse(free) = self.free_at.pop().unwrap_or(Reverse(now));
        let start = free.max(now);
        if start > now {
            self.waiting.push_back(start);
        }
        let decided_at = start.saturating_add(self.model.handshake);
        // Held until `finish` pushes the real end.
        self.free_at.push(Reverse(decided_at));
        self.busy = self.busy.saturating_add(self.model.handshake);
        Some(Slot {
            decided_at,
            queued: start > now,
        })
    }

    /// The attempt decided at `decided_at` was admitted: its worker does the
    /// session's work too. Returns when the session is ready to open.
    pub(crate) fn admitted(&mut self, decided_at: Instant) -> Instant {
        let done = decided_at.saturating_add(self.model.session);
        // The worker that decided at `decided_at` is the one whose free
        // instant is exactly that (ties: any of them is free then).
        let mut held = Vec::new();
        while let Some(Reverse(at)) = self.free_at.pop() {
            if at == decided_at {
                break;
            }
            held.push(Reverse(at));
        }
        self.free_at.extend(held);
        self.free_at.push(Reverse(done));
        self.busy = self.busy.saturating_add(self.model.session);
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Instant {
        Instant::from_millis(v)
    }

    fn model(workers: u32, backlog: usize) -> CostModel {
        CostModel {
            workers,
            handshake: Duration::from_millis(2),
            session: Duration::from_millis(1),
            backlog,
        }
    }

    #[test]
    fn an_idle_worker_decides_after_the_handshake() {
        let mut w = Workers::new(model(1, 10), ms(0));
        let slot = w.arrive(ms(100)).unwrap();
        assert_eq!(slot.decided_at, ms(102));
        assert!(!slot.queued);
        assert_eq!(w.admitted(slot.decided_at), ms(103));
        assert_eq!(w.busy, Duration::from_millis(3));
    }

    #[test]
    fn attempts_queue_in_arrival_order_behind_one_worker() {
        let mut w = Workers::new(model(1, 10), ms(0));
        let a = w.arrive(ms(0)).unwrap();
        let done = w.admitted(a.decided_at);
        let b = w.arrive(ms(0)).unwrap();
        let c = w.arrive(ms(0)).unwrap();
        assert_eq!(done, ms(3));
        assert_eq!((b.decided_at, b.queued), (ms(5), true));
        assert_eq!(c.decided_at, ms(7), "b was refused: only its handshake");
    }

    #[test]
    fn two_workers_halve_the_wait() {
        let mut w = Workers::new(model(2, 10), ms(0));
        let got: Vec<_> = (0..4)
            .map(|_| w.arrive(ms(0)).unwrap().decided_at)
            .collect();
        assert_eq!(got, [ms(2), ms(2), ms(4), ms(4)]);
    }

    #[test]
    fn a_full_backlog_drops_the_attempt() {
        let mut w = Workers::new(model(1, 2), ms(0));
        assert!(w.arrive(ms(0)).is_some(), "served at once");
        assert!(w.arrive(ms(0)).is_some(), "waits");
        assert!(w.arrive(ms(0)).is_some(), "waits");
        assert!(w.arrive(ms(0)).is_none(), "backlog full");
        // Once the first waiting one has started, there is room again.
        assert!(w.arrive(ms(2)).is_some());
    }

    #[test]
    fn the_refusal_capacity_is_workers_over_the_handshake() {
        assert_eq!(model(2, 1).refusal_capacity(), 1000.0);
        assert_eq!(CostModel::new().refusal_capacity(), 1000.0);
    }
}
