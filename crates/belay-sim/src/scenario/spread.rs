//! Detection spread: one policy against the outage with its notices spread
//! over several windows, each row next to the [`bound`](crate::bound).

use std::time::Duration;

use crate::bound::{spread_bound, SpreadBound};
use crate::policy::PolicyCase;
use crate::scenario::outage::{run_outage, OutageRun, OutageSpec};

/// One window's run and its bound.
#[derive(Debug, Clone)]
pub struct SpreadRow {
    /// Notices spread over `[0, window)` (0: all at once, by a reset).
    pub window: Duration,
    /// What the best possible protocol could do.
    pub bound: SpreadBound,
    /// What the policy did.
    pub run: OutageRun,
}

impl SpreadRow {
    /// Peak after the return over its bound.
    pub fn peak_ratio(&self) -> f64 {
        self.run.metrics.peak_after_return as f64 / self.bound.peak
    }

    /// Attempts per client after the return over its bound.
    pub fn attempts_ratio(&self) -> f64 {
        self.run.metrics.attempts_per_client_after_return() / self.bound.attempts_per_client
    }

    /// Time until every client is connected over its bound; `None` if not
    /// every client got in within the horizon.
    pub fn time_ratio(&self) -> Option<f64> {
        let all = self.run.metrics.to_100?;
        Some(all.as_secs_f64() / self.bound.all_connected.as_secs_f64())
    }
}

/// Run `case` against `spec` once per window.
pub fn run_spread(spec: &OutageSpec, case: &PolicyCase, windows: &[Duration]) -> Vec<SpreadRow> {
    windows
        .iter()
        .map(|&window| {
            let mut spec = spec.clone();
            spec.detection_window = window;
            SpreadRow {
                window,
                bound: spread_bound(spec.clients, spec.server.rate, spec.down_for, window),
                run: run_outage(&spec, case, None),
            }
        })
        .collect()
}
