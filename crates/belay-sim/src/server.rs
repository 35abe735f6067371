//! The server model: when it is down, how fast it admits, what it advertises.
//!
//! * **Availability.** Down on `[down_from, up_at)`: an attempt in that
//!   interval is refused at once. An attempt at exactly `up_at` finds the
//!   server up (with an empty bucket, so it is still refused unless
//!   `initial_tokens ≥ 1`).
//! * **Admission.** From `up_at` on, a token bucket of capacity `rate`
//!   tokens (or `capacity` if set), starting with `initial_tokens` (0 by
//!   default: empty), credited continuously at `rate` tokens per second. An attempt that finds one
//!   whole token takes it and is admitted; otherwise it is refused at once.
//!   Credit is kept in integer millionths of a token, so runs are exact and
//!   reproducible. Before the outage (the setup) admission is unlimited.
//! * **Rejection cost** (off by default, as in the seed): a refused attempt
//!   still burns `reject_cost` tokens of credit (saturating at zero), the
//!   TLS and handshake work the server did for nothing.
//! * **Pacing.** While up, every `welcome` can carry
//!   `FleetPacing::new(rate, origin).assign(now, open_connections)`. The
//!   server that comes back is a new process with a new plan (its origin is
//!   `up_at`); the plan of the server that went down also gives the advice
//!   for a planned restart.

use std::time::Duration;

use belay_proto::fleet::FleetPacing;
use belay_proto::message::{Pacing, ReconnectAdvice};
use belay_proto::Instant;

/// Millionths of a token per token.
const UNIT: u64 = 1_000_000;

/// What the server model is told to be.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Admissions per second once the server is back (the bucket's rate and
    /// capacity). Also the rate the pacing plans are computed for.
    pub rate: u64,
    /// Tokens in the bucket at the moment the server comes back. Default 0.
    pub initial_tokens: f64,
    /// The bucket's capacity in tokens; `None` (the default) means `rate`.
    pub capacity: Option<f64>,
    /// Tokens a refused attempt burns while the server is up. Default 0.
    pub reject_cost: f64,
    /// Whether `welcome` carries pacing hints.
    pub pacing: bool,
    /// The fraction of `rate` the pacing plans aim at
    /// (`FleetPacing::set_headroom`); `None` keeps the core's default, 0.95.
    pub headroom: Option<f64>,
}

impl ServerOptions {
    /// A server admitting `rate` connections per second, bucket starting
    /// empty, refusals free, pacing on.
    pub fn new(rate: u64) -> Self {
        ServerOptions {
            rate,
            initial_tokens: 0.0,
            capacity: None,
            reject_cost: 0.0,
            pacing: true,
            headroom: None,
        }
    }
}

/// The server's answer to a connection attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The transport opens.
    Admit,
    /// Connection refused (down, or no token).
    Refuse,
}

/// A token bucket in integer millionths of a token.
#[derive(Debug, Clone)]
struct TokenBucket {
    credit: u64,
    capacity: u64,
    per_micro: u64,
    last: u64,
    reject_cost: u64,
}

impl TokenBucket {
    fn new(options: &ServerOptions, at: Instant) -> Self {
        let rate = options.rate;
        let capacity = options.capacity.map_or(rate.saturating_mul(UNIT), to_units);
        TokenBucket {
            credit: to_units(options.initial_tokens).min(capacity),
            capacity,
            // `rate` tokens per 1e6 µs is `rate` millionths per µs.
            per_micro: rate,
            last: at.as_micros(),
            reject_cost: to_units(options.reject_cost),
        }
    }

    fn take(&mut self, now: Instant) -> bool {
        let now = now.as_micros().max(self.last);
        let earned = (now - self.last).saturating_mul(self.per_micro);
        self.credit = self.credit.saturating_add(earned).min(self.capacity);
        self.last = now;
        if self.credit >= UNIT {
            self.credit -= UNIT;
            true
        } else {
            self.credit = self.credit.saturating_sub(self.reject_cost);
            false
        }
    }
}

fn to_units(tokens: f64) -> u64 {
    if tokens.is_finite() && tokens > 0.0 {
        (tokens * UNIT as f64).round() as u64
    } else {
        0
    }
}

/// One simulated server (across its restart).
#[derive(Debug, Clone)]
pub(crate) struct ServerModel {
    options: ServerOptions,
    down_from: Instant,
    up_at: Instant,
    bucket: TokenBucket,
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
            plan
        };
        ServerModel {
            bucket: TokenBucket::new(&options, up_at),
            before: plan(Instant::ZERO),
            after: plan(up_at),
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
        if now < self.up_at || !self.bucket.take(now) {
            return Verdict::Refuse;
        }
        Verdict::Admit
    }

    /// The pacing for a `welcome` sent at `now`, if the server sends any.
    pub(crate) fn pacing(&mut self, now: Instant) -> Option<Pacing> {
        if !self.options.pacing {
            return None;
        }
        let open = self.open.max(1);
        let plan = if now < self.down_from {
            &mut self.before
        } else {
            &mut self.after
        };
        Some(plan.assign(now, open))
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
