//! The server model: when it is down, how fast it admits, what it advertises.
//!
//! * **Availability.** Down on `[down_from, up_at)`: an attempt in that
//!   interval is refused at once. An attempt at exactly `up_at` finds the
//!   server up (with an empty bucket, so it is still refused unless
//!   `initial_tokens ≥ 1`).
//! * **Admission** is the core's: from `up_at` on, every attempt goes
//!   through one [`belay_proto::server::TokenBucket`] and its `try_take`,
//!   the bucket and the call belay-server's upgrade makes. It is built from
//!   the same value the real server builds its bucket from
//!   (`ServerConfig::accept_rate`, here `rate`): `rate` tokens per second,
//!   a capacity of one second's worth. An attempt that finds one whole token
//!   takes it and is admitted; otherwise it is refused at once. Before the
//!   outage (the setup) admission is unlimited.
//! * **Where the model departs from a fresh belay-server**, on purpose and
//!   only through the bucket's own constructor and setters: it starts with
//!   `initial_tokens` (0 by default, the model; a new belay-server
//!   process starts full, which is `initial_tokens = rate`), `capacity` can
//!   replace one second's worth, and a refused attempt can burn
//!   `reject_cost` tokens (the TLS and handshake work the server did for
//!   nothing; the real bucket charges refusals nothing, and neither does the
//!   model by default). The per-source buckets of
//!   [`SourceTable`](belay_proto::server::SourceTable) are not modelled:
//!   every simulated client is its own source with at most one attempt in
//!   flight, far below a source's share of the accept rate.
//! * **Pacing.** While up, every `welcome` can carry
//!   `FleetPacing::new(rate, origin).assign(now, open_connections)`. The
//!   server that comes back is a new process with a new plan (its origin is
//!   `up_at`); the plan of the server that went down also gives the advice
//!   for a planned restart.

use std::time::Duration;

use belay_proto::fleet::FleetPacing;
use belay_proto::message::{Pacing, ReconnectAdvice};
use belay_proto::server::{Limits, TokenBucket, UpgradeDecision, UpgradeVerdict};

use crate::cost::Workers;
use belay_proto::Instant;

mod cluster;
mod options;

pub(crate) use cluster::Cluster;
pub use cluster::{Balancer, NODE_CLOCK_STEP};
pub use options::ServerOptions;

/// What the server does with an attempt once work has a cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// Decided at once, for free (down, or no cost model).
    Now(Verdict),
    /// The listen backlog is full: the attempt is dropped and its client
    /// hears nothing.
    Dropped,
    /// Admitted: the session is ready to open at `at`.
    Opens {
        /// When the session's work is done.
        at: Instant,
    },
    /// Refused at `at` with HTTP 503 and this `Retry-After`.
    Rejected {
        /// When the decision is made.
        at: Instant,
        /// The header's value, whole seconds.
        retry_after_secs: u64,
    },
}

/// Work the server did after its return, with a [`CostModel`](crate::cost::CostModel).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct WorkStats {
    /// CPU time spent on attempts (handshakes and sessions).
    pub busy: Duration,
    /// Attempts dropped because the listen backlog was full.
    pub dropped: u64,
    /// Attempts that had to wait for a worker.
    pub queued: u64,
    /// Sessions admitted for a client that had already given up.
    pub admitted_too_late: u64,
}

/// The server's answer to a connection attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The transport opens.
    Admit,
    /// Connection refused (down, or no token).
    Refuse,
}

/// The `Retry-After` of a refusal (whole seconds, at least 1); only a
/// browser is upgraded to be refused in-band, so any other verdict is 1.
fn retry_after_secs(verdict: &UpgradeVerdict) -> u64 {
    match verdict {
        UpgradeVerdict::Refuse {
            retry_after_secs, ..
        } => retry_after_secs.unwrap_or(1),
        _ => 1,
    }
}

/// The accept bucket of a server that comes back at `at`, built as
/// belay-server builds its own from `ServerConfig::accept_rate`
/// (`TokenBucket::new(rate, rate.max(1.0), now, true)` in
/// `crates/belay-server/src/server.rs`), except that it starts with
/// `initial_tokens` instead of full and may have another `capacity`.
fn accept_bucket(options: &ServerOptions, at: Instant) -> TokenBucket {
    let rate = options.rate as f64;
    let capacity = options.capacity.unwrap_or(rate.max(1.0));
    let mut bucket = TokenBucket::new(rate, capacity, at, false);
    bucket.set_tokens(at, options.initial_tokens);
    bucket
}

/// One simulated server (across its restart).
#[derive(Debug, Clone)]
pub(crate) struct ServerModel {
    options: ServerOptions,
    down_from: Instant,
    up_at: Instant,
    bucket: TokenBucket,
    limits: Limits,
    workers: Option<Workers>,
    work: WorkStats,
    before: FleetPacing,
    after: FleetPacing,
    open: usize,
}

impl ServerModel {
    /// A server that started at `Instant::ZERO`, is down on
    /// `[down_from, down_from + down_for)` and admits through the bucket
    /// from then on. `down_for` zero and `down_from` `Instant::MAX` mean
    /// "never down, never limited".
    pub(crate) fn new(options: ServerOptions, down_from: Instant, down_for: Duration) -> Self {
        let up_at = down_from.saturating_add(down_for);
        let plan = |origin| {
            let mut plan = FleetPacing::new(options.rate.max(1) as f64, origin);
            if let Some(headroom) = options.headroom {
                plan.set_headroom(headroom);
            }
            if let Some(fleet) = options.expected_fleet {
                plan.set_expected_fleet(fleet);
            }
            plan.set_cluster(options.cluster);
            plan
        };
        ServerModel {
            bucket: accept_bucket(&options, up_at),
            limits: Limits::default(),
            workers: options.cost.map(|model| Workers::new(model, up_at)),
            work: WorkStats::default(),
            before: plan(Instant::ZERO),
            after: plan(up_at.saturating_add(options.clock_offset)),
            options,
            down_from,
            up_at,
            open: 0,
        }
    }

    /// Decide an attempt that reaches the server at `now`.
    pub(crate) fn admit(&mut self, now: Instant) -> Verdict {
        if now < self.down_from {
            return Verdict::Admit;
        }
        if now < self.up_at {
            return Verdict::Refuse;
        }
        match self.bucket.try_take(now) {
            Ok(()) => Verdict::Admit,
            Err(_retry_after) => {
                let cost = self.options.reject_cost;
                if cost > 0.0 {
                    let left = self.bucket.available(now) - cost;
                    self.bucket.set_tokens(now, left);
                }
                Verdict::Refuse
            }
        }
    }

    /// An attempt that reaches the server at `now`: decided at once unless
    /// the server is up and work has a cost.
    pub(crate) fn attempt(&mut self, now: Instant) -> Answer {
        if now < self.up_at || (self.workers.is_none() && !self.options.answer_503) {
            return Answer::Now(self.admit(now));
        }
        let answer = match self.workers.as_mut() {
            // Free work, belay-server's answers.
            None => match self.upgrade(now) {
                UpgradeVerdict::Upgrade => Answer::Now(Verdict::Admit),
                refused => Answer::Rejected {
                    at: now,
                    retry_after_secs: retry_after_secs(&refused),
                },
            },
            Some(workers) => {
                let Some(slot) = workers.arrive(now) else {
                    self.work.dropped += 1;
                    return Answer::Dropped;
                };
                self.work.queued += u64::from(slot.queued);
                let at = slot.decided_at;
                match self.upgrade(at) {
                    UpgradeVerdict::Upgrade => Answer::Opens {
                        at: self.workers.as_mut().map_or(at, |w| w.admitted(at)),
                    },
                    refused => Answer::Rejected {
                        at,
                        retry_after_secs: retry_after_secs(&refused),
                    },
                }
            }
        };
        if let (Answer::Rejected { at, .. }, true) = (answer, self.options.reject_cost > 0.0) {
            let left = self.bucket.available(at) - self.options.reject_cost;
            self.bucket.set_tokens(at, left);
        }
        if let Some(workers) = &self.workers {
            self.work.busy = workers.busy;
        }
        answer
    }

    /// belay-server's upgrade checks at `at` for a native client (no
    /// `Origin`), one source per client (far below its share), not draining.
    fn upgrade(&mut self, at: Instant) -> UpgradeVerdict {
        let admission = self.bucket.try_take(at);
        UpgradeDecision::new(&self.limits, None, false)
            .and_then(|decision| decision.source_counted(Ok(())))
            .map(|(decision, ())| decision.admitted(admission))
            .unwrap_or_else(|refused| refused)
    }

    /// An admitted session's client had given up before it opened.
    pub(crate) fn admitted_too_late(&mut self) {
        self.work.admitted_too_late += 1;
    }

    /// The work done so far, if work has a cost.
    pub(crate) fn work(&self) -> Option<WorkStats> {
        self.workers.as_ref().map(|_| self.work)
    }

    /// The interval at which the server pings, if it does.
    pub(crate) fn ping_interval(&self) -> Option<Duration> {
        self.options.ping_interval
    }

    /// The pacing for a `welcome` sent at `now`, if the server sends any.
    pub(crate) fn pacing(&mut self, now: Instant) -> Option<Pacing> {
        if !self.options.pacing {
            return None;
        }
        let open = self.open.max(1);
        let clock = now.saturating_add(self.options.clock_offset);
        let plan = if now < self.down_from {
            &mut self.before
        } else {
            &mut self.after
        };
        Some(plan.assign(clock, open))
    }

    /// Advice for connection `index` of `total` before the planned restart.
    pub(crate) fn restart_advice(&self, index: usize, total: usize) -> ReconnectAdvice {
        let down_for = self.up_at.saturating_duration_since(self.down_from);
        self.before
            .restart_advice("restart", index, total, down_for)
    }

    /// A connection was admitted.
    pub(crate) fn opened(&mut self) {
        self.open += 1;
    }

    /// A connection is gone (closed by either side).
    pub(crate) fn closed(&mut self) {
        self.open = self.open.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use belay_proto::rng::SplitMix64;

    use super::*;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn server(options: ServerOptions) -> ServerModel {
        ServerModel::new(options, at_ms(1_000), Duration::from_secs(10))
    }

    #[test]
    fn before_the_outage_admission_is_unlimited() {
        let mut s = server(ServerOptions::new(1));
        for _ in 0..1000 {
            assert_eq!(s.admit(at_ms(999)), Verdict::Admit);
        }
    }

    #[test]
    fn while_down_every_attempt_is_refused() {
        let mut s = server(ServerOptions::new(500));
        assert_eq!(s.admit(at_ms(1_000)), Verdict::Refuse);
        assert_eq!(s.admit(at_ms(10_999)), Verdict::Refuse);
    }

    #[test]
    fn the_bucket_starts_empty_at_the_return() {
        let mut s = server(ServerOptions::new(500));
        assert_eq!(s.admit(at_ms(11_000)), Verdict::Refuse);
        // 2 ms later: one whole token.
        assert_eq!(s.admit(at_ms(11_002)), Verdict::Admit);
        assert_eq!(s.admit(at_ms(11_002)), Verdict::Refuse);
    }

    #[test]
    fn a_full_bucket_admits_its_capacity_at_once() {
        let mut s = server(ServerOptions::new(500));
        let admitted = (0..10_000)
            .filter(|_| s.admit(at_ms(60_000)) == Verdict::Admit)
            .count();
        assert_eq!(admitted, 500);
    }

    #[test]
    fn fractional_credit_accrues_continuously() {
        let mut s = server(ServerOptions::new(500));
        // Every 1.5 ms: 0.75 tokens per attempt, so 3 of every 4 get in.
        let admitted = (0..4000u64)
            .filter(|i| s.admit(Instant::from_micros(11_000_000 + i * 1500)) == Verdict::Admit)
            .count();
        assert_eq!(admitted, 2999);
    }

    #[test]
    fn initial_tokens_are_there_at_the_return() {
        let mut options = ServerOptions::new(500);
        options.initial_tokens = 50.0;
        let mut s = server(options);
        let admitted = (0..100)
            .filter(|_| s.admit(at_ms(11_000)) == Verdict::Admit)
            .count();
        assert_eq!(admitted, 50);
    }

    #[test]
    fn a_larger_capacity_lets_a_longer_rest_admit_more() {
        let mut options = ServerOptions::new(500);
        options.capacity = Some(550.0);
        let mut s = server(options);
        let admitted = (0..10_000)
            .filter(|_| s.admit(at_ms(60_000)) == Verdict::Admit)
            .count();
        assert_eq!(admitted, 550);
    }

    #[test]
    fn a_refusal_burns_its_cost_when_configured() {
        let mut options = ServerOptions::new(500);
        options.reject_cost = 1.0;
        let mut s = server(options);
        // Every 1.5 ms after an empty start: 0.75 tokens, refused, burnt.
        let admitted = (0..1000u64)
            .filter(|i| s.admit(Instant::from_micros(11_000_000 + i * 1500)) == Verdict::Admit)
            .count();
        assert_eq!(admitted, 0);
    }

    /// Attempt instants from `up_at` on for a bucket refilling at `rate`:
    /// bursts at one instant, runs a fraction of a token apart, and now and
    /// then a pause of up to 2 s that refills part or all of the bucket.
    /// About 0.7 tokens are earned per attempt, so the bucket keeps running
    /// dry.
    fn attempt_instants(up_at: Instant, rate: u64, count: usize) -> Vec<Instant> {
        let mut rng = SplitMix64::new(rate);
        let token = 1_000_000 / rate.max(1);
        let mut now = up_at.as_micros();
        (0..count)
            .map(|_| {
                now += if rng.next_u64() % (4 * rate.max(1)) == 0 {
                    rng.next_u64() % 2_000_000
                } else if rng.next_u64() % 20 < 11 {
                    0
                } else {
                    rng.next_u64() % (2 * token)
                };
                Instant::from_micros(now)
            })
            .collect()
    }

    #[test]
    fn admission_is_the_cores_token_bucket_built_like_belay_servers() {
        let up_at = at_ms(11_000);
        for rate in [1, 3, 7, 500, 5_000] {
            let instants = attempt_instants(up_at, rate, 20_000);
            let mut s = server(ServerOptions::new(rate));
            // What belay-server builds from `accept_rate` (there: full, at
            // process start); the model's returning server starts empty.
            let rate = rate as f64;
            let mut core = TokenBucket::new(rate, rate.max(1.0), up_at, false);
            let (mut admitted, mut refused) = (0, 0);
            for now in instants {
                let want = match core.try_take(now) {
                    Ok(()) => Verdict::Admit,
                    Err(_) => Verdict::Refuse,
                };
                assert_eq!(s.admit(now), want, "rate {rate} at {now:?}");
                admitted += usize::from(want == Verdict::Admit);
                refused += usize::from(want == Verdict::Refuse);
            }
            // Both answers occur often: the bucket runs dry and refills.
            assert!(
                admitted > 1_000 && refused > 1_000,
                "rate {rate}: {admitted}/{refused}"
            );
            // Not just the same answers: the same bucket, in the same state.
            assert_eq!(s.bucket, core, "rate {rate}");
        }
    }

    #[test]
    fn initial_tokens_capacity_and_reject_cost_go_through_the_cores_setters() {
        let up_at = at_ms(11_000);
        let mut options = ServerOptions::new(500);
        options.initial_tokens = 20.0;
        options.capacity = Some(40.0);
        options.reject_cost = 0.5;
        let mut s = server(options);
        let mut core = TokenBucket::new(500.0, 40.0, up_at, false);
        core.set_tokens(up_at, 20.0);
        for now in attempt_instants(up_at, 500, 20_000) {
            let want = match core.try_take(now) {
                Ok(()) => Verdict::Admit,
                Err(_) => {
                    core.set_tokens(now, core.available(now) - 0.5);
                    Verdict::Refuse
                }
            };
            assert_eq!(s.admit(now), want, "at {now:?}");
        }
        assert_eq!(s.bucket, core);
    }

    #[test]
    fn pacing_follows_the_switch_and_the_open_count() {
        let mut s = server(ServerOptions::new(500));
        for _ in 0..10_000 {
            s.opened();
        }
        let pacing = s.pacing(at_ms(0)).expect("pacing on");
        assert_eq!(pacing.period_ms, 21_052);
        let mut options = ServerOptions::new(500);
        options.pacing = false;
        assert_eq!(server(options).pacing(at_ms(0)), None);
    }

    #[test]
    fn restart_advice_spreads_the_fleet_after_the_downtime() {
        let s = server(ServerOptions::new(500));
        let first = s.restart_advice(0, 10_000);
        let last = s.restart_advice(9_999, 10_000);
        assert_eq!(first.min_delay_ms, 10_001);
        assert!(last.max_delay_ms < 31_053, "{last:?}");
    }
}
