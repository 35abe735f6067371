//! A client's own network drops for a few seconds; the server is fine.
//!
//! At `t = 0` the device's network goes away for `down` (3 s). Every
//! attempt while it is away fails at once with `Failure::Unreachable` (the
//! attempt never left the device). How the open connection ends depends on
//! [`Detection`]:
//!
//! * [`Detection::SocketError`]: the socket errors because the interface
//!   went away, so the session gets `TransportFailed(Unreachable)` at `t = 0`.
//! * [`Detection::Heartbeat`]: the connection silently dies (the path is a
//!   black hole from `t = 0` on and the connection does not survive the
//!   network's return, as when the device comes back with another address);
//!   only the session's own heartbeat (probe after 10 s of quiet, dead 10 s
//!   after an unanswered probe) can notice it.
//!
//! The figure is the time from the network's return (`t = down`) until the
//! client is ready again on a new connection. `clients` independent copies
//! (own seeds; each connected at a random moment 10–20 s before the blip, so
//! the heartbeat's phase is random) give a distribution instead of one draw.

use std::time::Duration;

use belay_proto::rng::{RandomSource, SplitMix64};
use belay_proto::Instant;

use crate::fleet::{EngineStats, Fleet, WorldOptions};
use crate::parallel::map_parallel;
use crate::policy::PolicyCase;
use crate::progress::Progress;
use crate::queue::Delivery;
use crate::record::Recorder;
use crate::scenario::outage::INCIDENT_AT;
use crate::server::{Cluster, ServerOptions};

/// How the session learns that its connection is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detection {
    /// The socket reports an error at once.
    SocketError,
    /// Nothing reports anything; only the heartbeat notices.
    Heartbeat,
}

/// Where a run starts: the earliest connection, 20 s before the blip.
const START: Instant = Instant::from_millis(INCIDENT_AT.as_millis() - 20_000);

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BlipSpec {
    /// Independent copies of the client.
    pub clients: usize,
    /// How long the device's network is away.
    pub down: Duration,
    /// How the loss is noticed.
    pub detection: Detection,
    /// How long after the network's return to keep watching.
    pub horizon: Duration,
    /// Run seed.
    pub seed: u64,
    /// Round-trip time to the server.
    pub latency: Duration,
}

impl BlipSpec {
    /// A 3 s blip noticed by the socket, 1,000 copies, watched for 60 s, seed 1.
    pub fn default_scenario() -> Self {
        BlipSpec {
            clients: 1000,
            down: Duration::from_secs(3),
            detection: Detection::SocketError,
            horizon: Duration::from_secs(60),
            seed: 1,
            latency: Duration::ZERO,
        }
    }

    /// Virtual milliseconds a run covers, for progress reports.
    fn span_ms(&self) -> u64 {
        self.end().as_millis() - START.as_millis()
    }

    fn end(&self) -> Instant {
        INCIDENT_AT.saturating_add(self.down + self.horizon)
    }
}

/// Time back, over the copies.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct BlipRun {
    /// The policy.
    pub case: PolicyCase,
    /// How the loss was noticed.
    pub detection: Detection,
    /// For each copy that got back within the horizon: the time from the
    /// network's return until it was ready again, sorted.
    pub back_after: Vec<Duration>,
    /// Copies not back within the horizon.
    pub not_back: usize,
    /// Engine counters.
    pub stats: EngineStats,
}

impl BlipRun {
    /// The mean time back.
    pub fn mean(&self) -> Option<Duration> {
        let n = u32::try_from(self.back_after.len())
            .ok()
            .filter(|&n| n > 0)?;
        Some(self.back_after.iter().sum::<Duration>() / n)
    }

    /// The `q`-quantile (nearest rank) of the time back, `q` in `[0, 1]`.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let n = self.back_after.len();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n);
        Some(self.back_after[rank - 1])
    }

    /// The slowest copy's time back.
    pub fn max(&self) -> Option<Duration> {
        self.back_after.last().copied()
    }
}

/// Simulate one policy.
pub fn run_blip(spec: &BlipSpec, case: &PolicyCase, progress: Option<&Progress>) -> BlipRun {
    if let Some(progress) = progress {
        progress.add_total(spec.span_ms());
    }
    simulate(spec, case, progress)
}

fn simulate(spec: &BlipSpec, case: &PolicyCase, progress: Option<&Progress>) -> BlipRun {
    let mut options = ServerOptions::new(500);
    options.pacing = case.pacing;
    let server = Cluster::new(&options, Instant::MAX, Duration::ZERO, spec.seed);
    let back = INCIDENT_AT.saturating_add(spec.down);
    let world = WorldOptions {
        latency: spec.latency,
        drop_after_ready: None,
        offline: Some((INCIDENT_AT, back)),
    };
    let end = spec.end();
    let record = Recorder::new(spec.clients, INCIDENT_AT, Duration::from_secs(1), 0);
    let mut fleet = Fleet::new(&case.config, spec.clients, spec.seed, server, world, record);
    fleet.set_progress(progress, START);
    let mut rng = SplitMix64::new(spec.seed ^ 0x626C_6970);
    for client in 0..fleet.len() {
        // Connected 10–20 s before the blip: a random heartbeat phase.
        let lead = 10_000_000 + (rng.next_unit() * 10_000_000.0) as u64;
        fleet.start_at(client, Instant::from_micros(INCIDENT_AT.as_micros() - lead));
    }
    fleet.run(Instant::from_micros(INCIDENT_AT.as_micros() - 1), false);
    let what = match spec.detection {
        Detection::SocketError => Delivery::InterfaceDown,
        Detection::Heartbeat => Delivery::BlackHole,
    };
    for client in 0..fleet.len() {
        if let Some(id) = fleet.server_conn(client) {
            fleet.incident(INCIDENT_AT, client, id, what);
        }
    }
    fleet.run(end, true);
    let (record, stats) = fleet.finish(end);

    let mut first: Vec<Option<Instant>> = vec![None; spec.clients];
    for &(at, client) in record.connects() {
        first[client as usize].get_or_insert(at);
    }
    let mut back_after: Vec<Duration> = first
        .iter()
        .flatten()
        .map(|at| at.saturating_duration_since(back))
        .collect();
    back_after.sort_unstable();
    BlipRun {
        case: case.clone(),
        detection: spec.detection,
        not_back: spec.clients - back_after.len(),
        back_after,
        stats,
    }
}

/// Every case, in parallel.
pub fn run_blip_all(
    spec: &BlipSpec,
    cases: &[PolicyCase],
    progress: Option<&Progress>,
) -> Vec<BlipRun> {
    if let Some(progress) = progress {
        progress.add_total(spec.span_ms() * cases.len() as u64);
    }
    map_parallel(cases.len(), |i| simulate(spec, &cases[i], progress))
}
