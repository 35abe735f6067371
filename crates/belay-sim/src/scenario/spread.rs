//! Detection spread: one policy against the outage with its notices spread
//! over several windows, each row next to the [`bound`](crate::bound).
//!
//! With a fleet-wide beat the notices' order, and where the death falls
//! within the beat and the slot grid, depend on when the dead server's
//! plan began; each window is therefore run at several such moments (the
//! *death phases*) and a row reports the worst of them on each column.

use std::time::Duration;

use crate::bound::{spread_bound, SpreadBound};
use crate::parallel::map_parallel;
use crate::policy::PolicyCase;
use crate::scenario::outage::{run_outage, OutageRun, OutageSpec, INCIDENT_AT};
use belay_proto::Instant;

/// The golden-ratio conjugate: the death phases `frac(k × GOLDEN)` cover
/// the range evenly for any count.
const GOLDEN: f64 = 0.618_033_988_749_894_8;

/// One window's runs (one per death phase) and its bound.
#[derive(Debug, Clone)]
pub struct SpreadRow {
    /// Notices spread over `(0, window]` (0: all at once, by a reset).
    pub window: Duration,
    /// What the best possible protocol could do.
    pub bound: SpreadBound,
    /// What the policy did, once per death phase; the first is the plan
    /// that began at the model's time zero, as in `belay sim outage`.
    pub runs: Vec<OutageRun>,
}

impl SpreadRow {
    /// The highest peak after the return over the phases.
    pub fn peak(&self) -> usize {
        self.runs
            .iter()
            .map(|r| r.metrics.peak_after_return)
            .max()
            .unwrap_or(0)
    }

    /// The most attempts per client after the return over the phases.
    pub fn attempts_per_client(&self) -> f64 {
        self.runs
            .iter()
            .map(|r| r.metrics.attempts_per_client_after_return())
            .fold(0.0, f64::max)
    }

    /// The latest moment every client was connected over the phases; `None`
    /// if in some phase not every client got in within the horizon.
    pub fn all_connected(&self) -> Option<Duration> {
        self.runs
            .iter()
            .map(|r| r.metrics.to_100)
            .try_fold(Duration::ZERO, |worst, t| Some(worst.max(t?)))
    }

    /// The worst peak after the return over its bound.
    pub fn peak_ratio(&self) -> f64 {
        self.peak() as f64 / self.bound.peak
    }

    /// The most attempts per client after the return over its bound.
    pub fn attempts_ratio(&self) -> f64 {
        self.attempts_per_client() / self.bound.attempts_per_client
    }

    /// The latest time until every client is connected over its bound;
    /// `None` if in some phase not every client got in within the horizon.
    pub fn time_ratio(&self) -> Option<f64> {
        let all = self.all_connected()?;
        Some(all.as_secs_f64() / self.bound.all_connected.as_secs_f64())
    }
}

/// When the dead server's plan began in death phase `k` of a run with
/// notices spread over `window`: phase 0 at the model's time zero, the
/// others spread over the 40 s before the first client connects.
fn plan_origin(k: usize, window: Duration) -> Instant {
    if k == 0 {
        return Instant::ZERO;
    }
    let earliest_welcome = INCIDENT_AT
        .saturating_sub(window)
        .saturating_sub(Duration::from_secs(1));
    let back = Duration::from_secs(40).mul_f64((k as f64 * GOLDEN).fract());
    earliest_welcome.saturating_sub(back)
}

/// Run `case` against `spec` once per window and death phase (`phases`, at
/// least 1), in parallel.
pub fn run_spread(
    spec: &OutageSpec,
    case: &PolicyCase,
    windows: &[Duration],
    phases: usize,
) -> Vec<SpreadRow> {
    let phases = phases.max(1);
    let mut runs = map_parallel(windows.len() * phases, |i| {
        let (window, k) = (windows[i / phases], i % phases);
        let mut spec = spec.clone();
        spec.detection_window = window;
        spec.server.plan_origin = plan_origin(k, window);
        // The returning server refuses as belay-server does: 503 with
        // `Retry-After`, so a client refused for lack of a token while the
        // server is up is told to come back in a second or two.
        spec.server.answer_503 = true;
        run_outage(&spec, case, None)
    })
    .into_iter();
    windows
        .iter()
        .map(|&window| SpreadRow {
            window,
            bound: spread_bound(spec.clients, spec.server.rate, spec.down_for, window),
            runs: runs.by_ref().take(phases).collect(),
        })
        .collect()
}
