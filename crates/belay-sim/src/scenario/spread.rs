//! Detection spread: one policy against the outage with its notices spread
//! over several windows, each row next to the [`bound`](crate::bound).
//!
//! With a fleet-wide beat the notices' order, and where the death falls
//! within the beat and the slot grid, depend on when the dead server's
//! plan began; each window is therefore run at several such moments (the
//! *death phases*, by offsetting the server's clock) and a row reports the
//! worst of them on each column.

use std::time::Duration;

use crate::bound::{spread_bound, SpreadBound};
use crate::parallel::map_parallel;
use crate::policy::PolicyCase;
use crate::scenario::outage::{run_outage, OutageRun, OutageSpec};

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
    /// What the policy did, once per death phase; the first with the
    /// server's clock on the model's, as in `belay sim outage`.
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

    /// The phases in which every client was connected within `1 + margin`
    /// times the bound's time (e.g. `0.1`: within 10 %).
    pub fn phases_on_time(&self, margin: f64) -> usize {
        let limit = self.bound.all_connected.as_secs_f64() * (1.0 + margin);
        self.runs
            .iter()
            .filter(|r| r.metrics.to_100.is_some_and(|t| t.as_secs_f64() <= limit))
            .count()
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

/// The dead server's clock offset in death phase `k`: phase 0 none (as in
/// `belay sim outage`), the others spread over an hour, which moves the
/// death through every relative position of beats and slots of up to a few
/// minutes.
fn clock_offset(k: usize) -> Duration {
    Duration::from_secs(3_600).mul_f64((k as f64 * GOLDEN).fract())
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
        spec.server.clock_offset = clock_offset(k);
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
