//! The whole matrix: every fault × every client × every transport × R
//! repetitions, a few at a time, bounded in time.

use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::Codec;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::agent::{BrowserSetup, ClientKind, Workload};
use super::fault::LabFault;
use super::hosted;
use super::measure::RepFigures;
use super::run::{repetition, RepPlan};
use super::server::ServerSetup;
use super::socketio_app::ServerApp;
use super::transport::LabTransport;

/// What `belay lab` runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LabConfig {
    /// The faults (rows).
    pub faults: Vec<LabFault>,
    /// The clients measured against each fault.
    pub clients: Vec<ClientKind>,
    /// The transports each (fault, client) runs over, where it applies
    /// ([`LabTransport::Sse`]: Belay clients, single-server faults other
    /// than `websocket-blocked`).
    pub transports: Vec<LabTransport>,
    /// Repetitions per (fault, client).
    pub reps: u32,
    /// Repetitions run at the same time.
    pub jobs: usize,
    /// How long each fault lasts (flapping excepted).
    pub fault_for: Duration,
    /// How long flapping lasts (the seed counts attempts in 15 s).
    pub flapping_for: Duration,
    /// No repetition starts after this much time; those left are reported
    /// as not run.
    pub time_bound: Duration,
    /// The server under test.
    pub server: ServerSetup,
    /// The clients' workload.
    pub work: Workload,
    /// The browser agent.
    pub browser: BrowserSetup,
}

impl Default for LabConfig {
    fn default() -> Self {
        LabConfig {
            faults: LabFault::ALL.to_vec(),
            clients: vec![ClientKind::Naive, ClientKind::Belay],
            transports: vec![LabTransport::WebSocket],
            reps: 10,
            jobs: 3,
            fault_for: Duration::from_secs(3),
            flapping_for: Duration::from_secs(15),
            time_bound: Duration::from_secs(45 * 60),
            server: ServerSetup::default(),
            work: Workload::default(),
            browser: BrowserSetup::default(),
        }
    }
}

impl LabConfig {
    /// The bound a silent fault must be detected within: the client's
    /// watchdog fires after two missed server pings, plus 500 ms for
    /// timers and the observation path.
    pub fn heartbeat_bound(&self) -> Duration {
        self.server.ping_interval * 2 + Duration::from_millis(500)
    }
}

/// One (fault, client, transport) cell: the figures of each repetition.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Cell {
    /// The row.
    pub fault: LabFault,
    /// The client.
    pub client: ClientKind,
    /// What the path lets through.
    pub transport: LabTransport,
    /// One entry per repetition run: its figures or why it failed.
    pub reps: Vec<Result<RepFigures, String>>,
    /// Repetitions not run because the time bound was reached.
    pub not_run: u32,
}

/// Where the run is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress {
    /// Repetitions finished.
    pub done: u64,
    /// Repetitions planned.
    pub total: u64,
    /// The last one finished, e.g. "freeze × belay".
    pub last: String,
}

/// What a run produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LabReport {
    /// What was run.
    pub config: LabConfig,
    /// One cell per (fault, client, transport) that applies, in table order.
    pub cells: Vec<Cell>,
    /// How long it took.
    pub elapsed: Duration,
}

/// A repetition that takes longer than this is abandoned as failed.
const REP_BOUND: Duration = Duration::from_secs(120);

/// Run the matrix; `progress` hears of every finished repetition.
pub async fn run(config: &LabConfig, progress: impl Fn(&Progress)) -> LabReport {
    let started = Instant::now();
    let mut cells: Vec<Cell> = Vec::new();
    for &transport in &config.transports {
        for &fault in &config.faults {
            for &client in &config.clients {
                if !applies(fault, client, transport) {
                    continue;
                }
                cells.push(Cell {
                    fault,
                    client,
                    transport,
                    reps: Vec::new(),
                    not_run: 0,
                });
            }
        }
    }
    // Repetition-major order, so concurrent jobs mix faults and clients.
    let mut plan = Vec::new();
    for rep in 0..config.reps {
        for index in 0..cells.len() {
            plan.push((index, rep));
        }
    }
    let total = plan.len() as u64;
    let gate = Arc::new(Semaphore::new(config.jobs.max(1)));
    let mut running = JoinSet::new();
    let mut done = 0_u64;
    let mut pending = plan.into_iter();
    loop {
        // Start what the gate allows, unless the time bound is reached.
        while let Ok(permit) = Arc::clone(&gate).try_acquire_owned() {
            let Some((index, rep)) = pending.next() else {
                break;
            };
            if started.elapsed() >= config.time_bound {
                cells[index].not_run += 1;
                done += 1;
                drop(permit);
                continue;
            }
            let cell = &cells[index];
            let mut work = config.work.clone();
            work.seed = config
                .work
                .seed
                .wrapping_add(u64::from(rep) * 7919 + index as u64);
            work.browser_fallback =
                cell.transport == LabTransport::Sse || cell.fault == LabFault::WebsocketBlocked;
            let rep_plan = RepPlan {
                fault: cell.fault,
                client: cell.client,
                transport: cell.transport,
                fault_for: config.fault_for,
                flapping_for: config.flapping_for,
                server: server_for(&config.server, cell.client),
                work,
                browser: config.browser.clone(),
            };
            running.spawn(async move {
                let result = tokio::time::timeout(REP_BOUND, repetition(&rep_plan))
                    .await
                    .unwrap_or_else(|_| Err(format!("no result within {REP_BOUND:?}")));
                drop(permit);
                (index, result)
            });
        }
        let Some(finished) = running.join_next().await else {
            break;
        };
        let (index, result) = match finished {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("a repetition task failed: {e}");
                continue;
            }
        };
        done += 1;
        let cell = &mut cells[index];
        cell.reps.push(result);
        progress(&Progress {
            done,
            total,
            last: format!("{} × {} × {}", cell.fault, cell.client, cell.transport),
        });
    }
    LabReport {
        config: config.clone(),
        cells,
        elapsed: started.elapsed(),
    }
}

/// Whether a (fault, client, transport) cell is run: over the fallback
/// only the clients that have one, and only the single-server faults (the
/// cluster's are measured over WebSocket; `websocket-blocked` is itself the
/// move to the fallback). The socket.io clients skip the cluster faults:
/// the lab's socket.io app is one process (a socket.io cluster needs its
/// Redis adapter and sticky sessions, a topology of its own that the lab
/// does not build; docs/LAB.md).
pub(crate) fn applies(fault: LabFault, client: ClientKind, transport: LabTransport) -> bool {
    if client.socketio_profile().is_some() && fault.cluster() {
        return false;
    }
    // Tokens and `$call`: Belay's clients only.
    if fault.hosted() && !client.is_belay() {
        return false;
    }
    transport == LabTransport::WebSocket
        || (client.is_belay() && !fault.cluster() && fault != LabFault::WebsocketBlocked)
}

/// The server a client is measured against: the socket.io app for the
/// socket.io clients (its profile matching theirs), else `belay serve --demo`.
fn server_for(setup: &ServerSetup, client: ClientKind) -> ServerSetup {
    let mut setup = setup.clone();
    setup.app = match client.socketio_profile() {
        Some("tuned") => ServerApp::SocketIoTuned,
        Some(_) => ServerApp::SocketIoDefault,
        None => ServerApp::BelayDemo,
    };
    setup
}

/// What the `websocket-blocked` fault and the `sse` transport ask of a
/// Belay client: ready over the fallback while WebSockets are blocked,
/// and (for the fault) back on WebSocket once they are not.
fn transport_shortfalls(
    fault: LabFault,
    transport: LabTransport,
    f: &RepFigures,
) -> impl Iterator<Item = String> {
    let mut out = Vec::new();
    if fault == LabFault::WebsocketBlocked {
        if !f.ready_via_sse_since_fault {
            out.push("not ready over SSE while WebSockets were blocked".to_owned());
        }
        if f.transports.last().map(String::as_str) != Some("websocket") {
            out.push(format!(
                "not back on WebSocket after the block ({})",
                f.transports.join(" → ")
            ));
        }
    }
    if transport == LabTransport::Sse && f.transports.iter().any(|t| t != "sse") {
        out.push(format!(
            "ready over {} with WebSockets blocked",
            f.transports.join(" → ")
        ));
    }
    out.into_iter()
}

/// What the binary codec asks of a Belay client: every ready over a
/// WebSocket in the binary codec (over the fallback, JSON is the rule), and
/// at least one such ready in a `websocket` cell.
fn codec_shortfalls(
    codec: Codec,
    transport: LabTransport,
    f: &RepFigures,
) -> impl Iterator<Item = String> {
    let mut out = Vec::new();
    if codec == Codec::Binary {
        let json = f.websocket_codecs.iter().any(|c| c != "binary");
        let none = transport == LabTransport::WebSocket && f.websocket_codecs.is_empty();
        if json || none {
            out.push(format!(
                "asked for the binary codec, ready over WebSocket in {:?}",
                f.websocket_codecs
            ));
        }
    }
    out.into_iter()
}

/// What a cluster fault asks of a Belay client beyond the guarantees of
/// every fault: a move or a Redis that comes back with its data is a resume
/// (no resync); Redis restarted empty, or a failover to another Redis
/// process, is announced (a resync); a Redis fault leaves the connection up
/// (no dial).
fn cluster_shortfalls(fault: LabFault, f: &RepFigures) -> impl Iterator<Item = String> {
    let mut out = Vec::new();
    match fault {
        LabFault::Deploy
        | LabFault::NodeKill
        | LabFault::RedisDown
        | LabFault::SentinelFailoverWait
        | LabFault::Resharding
        | LabFault::HostNodeKill
            if f.resyncs > 0 =>
        {
            out.push(format!("{} resyncs where the history was kept", f.resyncs));
        }
        LabFault::RedisRestart | LabFault::SentinelFailover | LabFault::ClusterPrimaryKilled
            if f.resyncs == 0 =>
        {
            out.push("the lost history was never announced (no resync)".to_owned());
        }
        _ => {}
    }
    if matches!(
        fault,
        LabFault::RedisDown
            | LabFault::RedisRestart
            | LabFault::SentinelFailover
            | LabFault::SentinelFailoverWait
            | LabFault::ClusterPrimaryKilled
            | LabFault::Resharding
            | LabFault::HostNodeKill
    ) && f.dials_since_fault > 0
    {
        out.push(format!(
            "{} dials: the connection did not stay up",
            f.dials_since_fault
        ));
    }
    out.into_iter()
}

/// What the hosted fault asks of a Belay client calling the host: calls
/// were in flight when the host's node died, each settled `host_lost` (or
/// with an answer that left before the kill) within the bound, and the
/// host answered again once it came back on a living node.
fn host_shortfalls(fault: LabFault, f: &RepFigures) -> impl Iterator<Item = String> {
    let mut out = Vec::new();
    if fault.hosted() {
        if f.in_flight_at_fault == 0 {
            out.push("no call was in flight at the host when its node died".to_owned());
        } else if f.in_flight_host_lost == 0 {
            out.push(format!(
                "none of the {} calls in flight settled host_lost",
                f.in_flight_at_fault
            ));
        }
        if f.in_flight_otherwise > 0 {
            out.push(format!(
                "{} of the {} calls in flight settled neither host_lost nor answered",
                f.in_flight_otherwise, f.in_flight_at_fault
            ));
        }
        if !f
            .in_flight_settled_after
            .is_some_and(|d| d <= hosted::HOST_LOST_BOUND)
        {
            out.push(format!(
                "the calls in flight settled after {:?}, beyond the bound {:?}",
                f.in_flight_settled_after,
                hosted::HOST_LOST_BOUND
            ));
        }
        if f.answered_after.is_none() {
            out.push("the host never answered again after its node died".to_owned());
        }
    }
    out.into_iter()
}

impl Cell {
    /// For a Belay client: every way this cell falls short of the
    /// guarantees (empty when it keeps them all). Other clients: empty.
    pub fn shortfalls(&self, config: &LabConfig) -> Vec<String> {
        if !self.client.is_belay() {
            return Vec::new();
        }
        let mut out = Vec::new();
        if self.not_run > 0 {
            out.push(format!("{} repetitions not run (time bound)", self.not_run));
        }
        for (i, rep) in self.reps.iter().enumerate() {
            let n = i + 1;
            let f = match rep {
                Ok(f) => f,
                Err(e) => {
                    out.push(format!("repetition {n} failed: {e}"));
                    continue;
                }
            };
            if f.settled != f.requests {
                out.push(format!(
                    "rep {n}: {} of {} requests settled",
                    f.settled, f.requests
                ));
            }
            if f.lost_silently > 0 {
                out.push(format!(
                    "rep {n}: {} publications lost silently",
                    f.lost_silently
                ));
            }
            if f.duplicates > 0 {
                out.push(format!("rep {n}: {} duplicates", f.duplicates));
            }
            if f.server_connections_after != Some(self.fault.connections_after()) {
                out.push(format!(
                    "rep {n}: {:?} server connections after the fault",
                    f.server_connections_after
                ));
            }
            if self.fault.silent() && !f.detection.is_some_and(|d| d <= config.heartbeat_bound()) {
                out.push(format!(
                    "rep {n}: detection {:?} beyond the heartbeat bound {:?}",
                    f.detection,
                    config.heartbeat_bound()
                ));
            }
            if self.fault.detectable() && f.detection.is_none() {
                out.push(format!("rep {n}: the fault was never detected"));
            }
            if f.ready_after.is_none() {
                out.push(format!("rep {n}: not ready again after the fault"));
            }
            out.extend(cluster_shortfalls(self.fault, f).map(|s| format!("rep {n}: {s}")));
            out.extend(host_shortfalls(self.fault, f).map(|s| format!("rep {n}: {s}")));
            out.extend(
                transport_shortfalls(self.fault, self.transport, f)
                    .map(|s| format!("rep {n}: {s}")),
            );
            out.extend(
                codec_shortfalls(config.work.codec, self.transport, f)
                    .map(|s| format!("rep {n}: {s}")),
            );
        }
        out
    }
}
