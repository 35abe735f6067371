//! A server that accepts every connection and drops it soon after.
//!
//! The server is healthy and unlimited, but it drops every connection
//! (`TransportClosed(abnormal)`) `drop_after` (300 ms) after the client
//! became ready. The question is how often a client reconnects:
//!
//! * **reset on open**: the backoff resets as soon as a connection works.
//!   In the core a connection "works" when the session is ready, and the
//!   reset waits `reset_after` of readiness; with `reset_after = 0` it
//!   happens the moment the session is ready. Since `welcome` arrives at the
//!   same instant as the open in this model, that *is* reset on open.
//! * **reset after 5 s** of readiness (Belay's default): a connection that
//!   lives 300 ms never resets the backoff, so the delays keep growing.
//!
//! `clients` independent copies of the single client of the seed run side
//! by side (each with its own seed, and no admission limit, so they do not
//! interact); the figures are their mean, which is what one client does on
//! average, instead of one draw.
//!
//! Two figures per run: reconnects in the first minute after the first
//! connection (the seed's measure: 46 for exponential 1–30 s with reset on
//! open is 60 s / (1 s + 0.3 s)), and the mean reconnects per minute over
//! the whole `duration`.

use std::time::Duration;

use belay_proto::Instant;

use crate::fleet::{EngineStats, Fleet, WorldOptions};
use crate::parallel::map_parallel;
use crate::policy::PolicyCase;
use crate::progress::Progress;
use crate::record::Recorder;
use crate::scenario::outage::INCIDENT_AT;
use crate::server::{Cluster, ServerOptions};

/// Where a run starts: the first connection.
const START: Instant = INCIDENT_AT;

/// What to simulate.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FlappingSpec {
    /// Independent copies of the client.
    pub clients: usize,
    /// How long after becoming ready each connection is dropped.
    pub drop_after: Duration,
    /// How long to watch.
    pub duration: Duration,
    /// Run seed.
    pub seed: u64,
    /// Round-trip time to the server.
    pub latency: Duration,
}

impl FlappingSpec {
    /// The seed's setting: drop after 300 ms; watched for 10 minutes; the
    /// mean of 100 clients; seed 1.
    pub fn seed_scenario() -> Self {
        FlappingSpec {
            clients: 100,
            drop_after: Duration::from_millis(300),
            duration: Duration::from_secs(600),
            seed: 1,
            latency: Duration::ZERO,
        }
    }

    /// Virtual milliseconds a run covers, for progress reports.
    fn span_ms(&self) -> u64 {
        self.end().as_millis() - START.as_millis()
    }

    fn end(&self) -> Instant {
        INCIDENT_AT.saturating_add(self.duration)
    }
}

/// When the backoff resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// The moment the session is ready (`reset_after = 0`).
    OnOpen,
    /// After `reset_after` of readiness, as configured in the case (5 s).
    AfterReady,
}

/// One policy with one reset rule.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FlappingRun {
    /// The policy, with `reset_after` as simulated.
    pub case: PolicyCase,
    /// The reset rule.
    pub reset: Reset,
    /// Mean reconnects in the first 60 s after the first connection.
    pub first_minute: f64,
    /// Fewest and most reconnects in the first minute over the clients.
    pub first_minute_range: (usize, usize),
    /// Mean reconnects per minute over the whole duration.
    pub per_minute: f64,
    /// Engine counters.
    pub stats: EngineStats,
}

/// Simulate one policy with one reset rule.
pub fn run_flapping(
    spec: &FlappingSpec,
    case: &PolicyCase,
    reset: Reset,
    progress: Option<&Progress>,
) -> FlappingRun {
    if let Some(progress) = progress {
        progress.add_total(spec.span_ms());
    }
    simulate(spec, case, reset, progress)
}

fn simulate(
    spec: &FlappingSpec,
    case: &PolicyCase,
    reset: Reset,
    progress: Option<&Progress>,
) -> FlappingRun {
    let case = match reset {
        Reset::OnOpen => case.clone().with_reset_after(Duration::ZERO),
        Reset::AfterReady => case.clone(),
    };
    let mut options = ServerOptions::new(500);
    options.pacing = case.pacing;
    let server = Cluster::new(&options, Instant::MAX, Duration::ZERO, spec.seed);
    let world = WorldOptions {
        latency: spec.latency,
        drop_after_ready: Some(spec.drop_after),
        offline: None,
    };
    let end = spec.end();
    let record = Recorder::new(spec.clients, INCIDENT_AT, Duration::from_secs(60), 0);
    let mut fleet = Fleet::new(&case.config, spec.clients, spec.seed, server, world, record);
    fleet.set_progress(progress, START);
    for client in 0..fleet.len() {
        fleet.start_at(client, INCIDENT_AT);
    }
    fleet.run(end, false);
    let (record, stats) = fleet.finish(end);

    let minute = INCIDENT_AT.saturating_add(Duration::from_secs(60));
    let mut first = vec![0usize; spec.clients];
    let mut total = 0usize;
    for &(at, client) in record.connects() {
        // The first connection (at the start) is not a reconnect.
        if at > INCIDENT_AT {
            total += 1;
            if at <= minute {
                first[client as usize] += 1;
            }
        }
    }
    let clients = spec.clients.max(1) as f64;
    let minutes = spec.duration.as_secs_f64() / 60.0;
    FlappingRun {
        case,
        reset,
        first_minute: first.iter().sum::<usize>() as f64 / clients,
        first_minute_range: (
            first.iter().copied().min().unwrap_or(0),
            first.iter().copied().max().unwrap_or(0),
        ),
        per_minute: total as f64 / clients / minutes,
        stats,
    }
}

/// Every case with both reset rules, in parallel: for each case, on-open
/// then after-ready.
pub fn run_flapping_all(
    spec: &FlappingSpec,
    cases: &[PolicyCase],
    progress: Option<&Progress>,
) -> Vec<FlappingRun> {
    if let Some(progress) = progress {
        progress.add_total(spec.span_ms() * 2 * cases.len() as u64);
    }
    map_parallel(cases.len() * 2, |i| {
        let reset = if i % 2 == 0 {
            Reset::OnOpen
        } else {
            Reset::AfterReady
        };
        simulate(spec, &cases[i / 2], reset, progress)
    })
}
