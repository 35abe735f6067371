//! Refusals that cost work: every policy against the outage on a server
//! whose attempts cost CPU ([`CostModel`]), for several handshake costs.

use std::time::Duration;

use crate::cost::CostModel;
use crate::parallel::map_parallel;
use crate::policy::PolicyCase;
use crate::scenario::outage::{run_outage, OutageRun, OutageSpec};

/// How long the last window is over which a run's goodput is measured.
pub const GOODPUT_WINDOW: Duration = Duration::from_secs(30);

/// One policy at one handshake cost.
#[derive(Debug, Clone)]
pub struct CostCell {
    /// The work of one attempt's handshake.
    pub handshake: Duration,
    /// The run.
    pub run: OutageRun,
}

impl CostCell {
    /// Whether the server never caught up: not every client connected
    /// within the horizon.
    pub fn never_caught_up(&self) -> bool {
        self.run.metrics.to_100.is_none()
    }

    /// Whether the server fell into the metastable state: it never caught
    /// up, and at the end it let in less than a tenth of its admission rate
    /// per second (busy with answers that come too late, not merely slow).
    pub fn metastable(&self, rate: u64) -> bool {
        self.never_caught_up() && self.goodput_at_end() < rate as f64 / 10.0
    }

    /// Clients that got in per second over the last [`GOODPUT_WINDOW`].
    pub fn goodput_at_end(&self) -> f64 {
        self.run.goodput_at_end(GOODPUT_WINDOW)
    }
}

/// Every case at every handshake cost (the rest of `cost` as given), in
/// parallel; `result[case][handshake]`.
pub fn run_cost_sweep(
    spec: &OutageSpec,
    cases: &[PolicyCase],
    cost: CostModel,
    handshakes: &[Duration],
) -> Vec<Vec<CostCell>> {
    let per_case = handshakes.len();
    let cells = map_parallel(cases.len() * per_case, |job| {
        let (case, h) = (job / per_case, job % per_case);
        let mut spec = spec.clone();
        let mut cost = cost;
        cost.handshake = handshakes[h];
        spec.server.cost = Some(cost);
        CostCell {
            handshake: handshakes[h],
            run: run_outage(&spec, &cases[case], None),
        }
    });
    let mut cells = cells.into_iter();
    (0..cases.len())
        .map(|_| cells.by_ref().take(per_case).collect())
        .collect()
}
