//! The mass reconnect: every client loses the server at once.
//!
//! * **Unplanned outage** (the seed's scenario): at `t = 0` the server
//!   process dies. It forgets every connection at once. With no detection
//!   window (the default) each client learns of it by
//!   `TransportClosed(abnormal)` at `t = 0` (the kernel reset the
//!   connections). With a window `W`, the death is silent (a host that froze
//!   or vanished): nothing is delivered any more and only each client's own
//!   heartbeat notices, at a moment uniform in `(0, W]` — each client probes
//!   after `W` of quiet, gives up 1 ms after an unanswered probe, and
//!   connected at its own moment in `(−W, 0]`. The server is down until `D`,
//!   then admits through its token bucket (see [`crate::server`]).
//! * **Planned restart**: at `t = 0` the server sends every connection `i`
//!   `reconnect` advice from `FleetPacing::restart_advice("restart", i, N, D)`
//!   and closes it with 1012 (service restart), then is down until `D`
//!   exactly as above.
//!
//! Before `t = 0` the whole fleet connects at `t = −1 s`, all at the same
//! instant, so every `welcome` is sent while the server holds all `N`
//! connections (the pacing period is computed for the whole fleet). Nothing
//! before `t = 0` is counted.
//!
//! The run ends at the horizon `H`, or as soon as every client is connected
//! again, whichever comes first: once every client is connected nothing the
//! metrics count can happen any more (the server answers every ping, so no
//! connection is lost again).

use std::time::Duration;

use belay_proto::rng::{RandomSource, SplitMix64};
use belay_proto::Instant;

use crate::fleet::{EngineStats, Fleet, WorldOptions};
use crate::metrics::{peak_window, OutageMetrics};
use crate::parallel::map_parallel;
use crate::policy::PolicyCase;
use crate::progress::Progress;
use crate::queue::Delivery;
use crate::record::Recorder;
use crate::server::{Cluster, ServerOptions, WorkStats};

/// Where "t = 0" (the incident) sits on the virtual clock. Far enough from
/// the clock's origin for any setup before it.
pub const INCIDENT_AT: Instant = Instant::from_millis(60_000);

/// Where a run starts: the setup.
const START: Instant = Instant::from_millis(INCIDENT_AT.as_millis() - 1_000);

/// Width of the time-series bins (the plot and `attempts_per_bin`).
pub const BIN: Duration = Duration::from_secs(1);

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OutageSpec {
    /// Clients in the fleet (`N`).
    pub clients: usize,
    /// How long the server stays down (`D`).
    pub down_for: Duration,
    /// The server's admission and options (its `pacing` switch is taken
    /// from each [`PolicyCase`]).
    pub server: ServerOptions,
    /// How long after the incident the run may last (`H`).
    pub horizon: Duration,
    /// Run seed; client `i` gets [`client_seed`](crate::client_seed)`(seed, i)`.
    pub seed: u64,
    /// Clients notice the loss by their heartbeat at a moment uniform in
    /// `(0, window]` (a silent death); zero: all at `t = 0` by a reset.
    /// Ignored for a planned restart.
    pub detection_window: Duration,
    /// Round-trip time to the server: the server decides an attempt at
    /// `t + latency/2`, the client learns the outcome at `t + latency`, and
    /// `welcome`/`pong` arrive `latency` after `connect`/`ping`.
    pub latency: Duration,
    /// A planned restart with reconnect advice instead of an outage.
    pub planned: bool,
}

impl OutageSpec {
    /// The seed's outage: 10,000 clients, 10 s down, 500/s, horizon 90 s,
    /// seed 1, losses noticed at once, no latency.
    pub fn seed_scenario() -> Self {
        OutageSpec {
            clients: 10_000,
            down_for: Duration::from_secs(10),
            server: ServerOptions::new(500),
            horizon: Duration::from_secs(90),
            seed: 1,
            detection_window: Duration::ZERO,
            latency: Duration::ZERO,
            planned: false,
        }
    }

    /// The same, as a planned restart.
    pub fn restart(mut self) -> Self {
        self.planned = true;
        self
    }

    /// Virtual milliseconds a run covers, for progress reports.
    fn span_ms(&self) -> u64 {
        self.end().as_millis() - START.as_millis()
    }

    fn end(&self) -> Instant {
        INCIDENT_AT.saturating_add(self.horizon)
    }
}

/// One policy's run.
#[derive(Debug, Clone)]
pub struct OutageRun {
    /// The policy.
    pub case: PolicyCase,
    /// Its figures.
    pub metrics: OutageMetrics,
    /// The raw record (time series for plots).
    pub record: Recorder,
    /// Engine counters.
    pub stats: EngineStats,
    /// The server's work after its return, with a cost model (summed over
    /// the nodes).
    pub work: Option<WorkStats>,
    /// Each node's peak: the largest number of attempts that reached it in
    /// any window `[t, t + 1 s)` with `t ≥ D` (one entry per node; with one
    /// node, the server's own peak, at the server).
    pub node_peaks: Vec<usize>,
}

impl OutageRun {
    /// Clients that got in (connected, from a state of not being connected)
    /// per second over the last `window` of the run: near zero for a server
    /// that never catches up.
    pub fn goodput_at_end(&self, window: Duration) -> f64 {
        let end = INCIDENT_AT.saturating_add(self.metrics.horizon);
        let from = end.saturating_sub(window);
        let got_in = self
            .record
            .connects()
            .iter()
            .filter(|(at, _)| *at >= from && *at <= end)
            .count();
        got_in as f64 / window.as_secs_f64().max(1e-9)
    }
}

/// Simulate `spec` for one policy.
pub fn run_outage(spec: &OutageSpec, case: &PolicyCase, progress: Option<&Progress>) -> OutageRun {
    if let Some(progress) = progress {
        progress.add_total(spec.span_ms());
    }
    simulate(spec, case, progress)
}

fn simulate(spec: &OutageSpec, case: &PolicyCase, progress: Option<&Progress>) -> OutageRun {
    let mut options = spec.server.clone();
    options.pacing = case.pacing;
    // With server pings the death is silent too: the pings stop, and each
    // client's heartbeat notices.
    let pinged = options.ping_interval.filter(|_| !spec.planned);
    if !spec.planned && (!spec.detection_window.is_zero() || pinged.is_some()) {
        // The fleet connects over the window before the death, so the
        // server is told the fleet to expect (`--expected-clients`), as a
        // production server is; otherwise its first clients would get
        // periods sized for the few connected before them.
        // Each node expects its share.
        let share = spec.clients.div_ceil(options.nodes.max(1));
        options.expected_fleet.get_or_insert(share);
    }
    let server = Cluster::new(&options, INCIDENT_AT, spec.down_for, spec.seed);
    let bins = spec.horizon.as_micros().div_ceil(BIN.as_micros()) as usize;
    let record = Recorder::new(spec.clients, INCIDENT_AT, BIN, bins);
    let world = WorldOptions {
        latency: spec.latency,
        ..WorldOptions::default()
    };
    let heartbeat = !spec.planned && !spec.detection_window.is_zero();
    let mut config = case.config.clone();
    let start = if let Some(ping) = pinged {
        // Each client connected at its own moment in `(−2I, −I]`, so the
        // server has pinged it at least once, on its beat, before the death.
        INCIDENT_AT.saturating_sub(ping * 2)
    } else if heartbeat {
        // Clients notice the death only by their own heartbeat: each probes
        // after `W` of quiet and gives up at once when the probe goes
        // unanswered, and each connected at its own moment in `(−W, 0]`,
        // so its last frame (the `welcome`) is there and it notices at a
        // moment uniform in `(0, W]`.
        config.set_probe_interval(spec.detection_window);
        config.set_probe_timeout(Duration::from_millis(1));
        INCIDENT_AT.saturating_sub(spec.detection_window)
    } else {
        START
    };
    let mut fleet = Fleet::new(&config, spec.clients, spec.seed, server, world, record);
    fleet.set_progress(progress, start.min(START));
    let mut rng = SplitMix64::new(spec.seed ^ 0x6F75_7461_6765);
    let window = spec.detection_window.as_micros() as f64;
    for client in 0..fleet.len() {
        let at = if let Some(ping) = pinged {
            let offset = ((1.0 - rng.next_unit()) * ping.as_micros() as f64).ceil() as u64;
            Instant::from_micros(INCIDENT_AT.as_micros() - ping.as_micros() as u64 - offset + 1)
        } else if heartbeat {
            // Strictly after −W: a probe at exactly 0 would still be answered.
            let offset = ((1.0 - rng.next_unit()) * window).ceil().max(1.0) as u64;
            Instant::from_micros(INCIDENT_AT.as_micros() + 1 - offset)
        } else {
            START
        };
        fleet.start_at(client, at);
    }
    fleet.run(Instant::from_micros(INCIDENT_AT.as_micros() - 1), false);

    if spec.planned {
        for client in 0..fleet.len() {
            if let Some(id) = fleet.server_conn(client) {
                fleet.incident(INCIDENT_AT, client, id, Delivery::Restart);
            }
        }
    } else if heartbeat || pinged.is_some() {
        // A silent death: nothing is delivered any more and nobody is told;
        // each client's heartbeat notices.
        fleet.server_dies(INCIDENT_AT);
    } else {
        let ids: Vec<_> = (0..fleet.len()).map(|c| fleet.server_conn(c)).collect();
        fleet.server_dies(INCIDENT_AT);
        for (client, id) in ids.into_iter().enumerate() {
            let Some(id) = id else { continue };
            fleet.incident(INCIDENT_AT, client, id, Delivery::DropAbnormal);
        }
    }
    fleet.run(spec.end(), true);
    let work = fleet.work();
    let back = INCIDENT_AT.saturating_add(spec.down_for);
    let node_peaks = fleet
        .node_attempts()
        .iter()
        .map(|attempts| peak_window(attempts, back, Duration::from_secs(1)).0)
        .collect();
    let (record, stats) = fleet.finish(spec.end());
    OutageRun {
        case: case.clone(),
        metrics: OutageMetrics::from_record(&record, spec.down_for, spec.horizon),
        record,
        stats,
        work,
        node_peaks,
    }
}

/// Simulate `spec` for every case, in parallel; results in `cases` order.
pub fn run_outage_all(
    spec: &OutageSpec,
    cases: &[PolicyCase],
    progress: Option<&Progress>,
) -> Vec<OutageRun> {
    if let Some(progress) = progress {
        progress.add_total(spec.span_ms() * cases.len() as u64);
    }
    map_parallel(cases.len(), |i| simulate(spec, &cases[i], progress))
}
