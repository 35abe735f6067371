//! `server-bench peers`: each load against each server, fresh server per
//! load, servers interleaved within every run; a row per measurement and
//! `MEDIAN` lines with every server's ratio to Belay's median.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Peer;
use crate::clients::target::{parse_sources, Target};
use crate::loads::broadcast::{self, BroadcastConfig, BroadcastReport};
use crate::loads::echo::{self, EchoConfig, EchoReport};
use crate::loads::idle::{self, IdleConfig};
use crate::loads::socketio as socketio_load;
use crate::measure::procfs::CLK_TCK;
use crate::measure::stats::{median, ms};
use crate::servers::child::{NodeMemory, ServerChild};

/// The loads `server-bench peers` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Load {
    /// Idle connections held with heartbeats: RSS and CPU per connection.
    Idle,
    /// Sequential echo requests: requests/s, latency, CPU per request.
    Echo,
    /// One channel (room) to many subscribers: latency, CPU per delivery.
    Broadcast,
}

/// Arguments of `server-bench peers`.
#[derive(Debug, Clone, clap::Args)]
pub struct PeersArgs {
    /// Servers, in the order each run visits them (the first is the
    /// baseline of the ratios; keep Belay first).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "belay,floor,ws,socketio"
    )]
    pub peers: Vec<Peer>,
    /// Loads to run.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "idle,echo,broadcast"
    )]
    pub only: Vec<Load>,
    /// Idle connections.
    #[arg(long, default_value_t = 10_000)]
    pub connections: usize,
    /// Seconds the idle connections are held (CPU is measured over the hold).
    #[arg(long, default_value_t = 30)]
    pub hold_secs: u64,
    /// Every server's heartbeat interval during the idle load (ms).
    #[arg(long, default_value_t = 10_000)]
    pub ping_interval_ms: u64,
    /// Echo sessions.
    #[arg(long, default_value_t = 100)]
    pub echo_connections: usize,
    /// Sequential echo requests per session.
    #[arg(long, default_value_t = 2_000)]
    pub echo_requests: usize,
    /// Broadcast subscribers.
    #[arg(long, default_value_t = 10_000)]
    pub subscribers: usize,
    /// Publications.
    #[arg(long, default_value_t = 250)]
    pub messages: u64,
    /// Publications per second.
    #[arg(long, default_value_t = 25.0)]
    pub rate: f64,
    /// Loopback source addresses of the load, round-robin.
    #[arg(long, default_value = "127.0.0.1-127.0.0.40")]
    pub sources: String,
    /// Runs (each visits every server for every load).
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// The Node binary.
    #[arg(long, default_value = "node")]
    pub node: PathBuf,
    /// The Node servers' script (peers/bench/server.mjs; `npm ci` there first).
    #[arg(long, default_value = "peers/bench/server.mjs")]
    pub node_server: PathBuf,
}

/// Heartbeat interval of the echo and broadcast loads (ms): every server's
/// default-like 25 s, so no heartbeat falls inside a short load.
const BUSY_PING_INTERVAL_MS: u64 = 25_000;

/// One figure's values: per server, one per run.
struct Series {
    what: &'static str,
    values: Vec<Vec<f64>>,
}

/// Run `server-bench peers`; `exe` is the `server-bench` binary that serves
/// Belay and the floor.
pub async fn run(args: PeersArgs, exe: &Path) -> Result<(), String> {
    let sources = parse_sources(&args.sources).map_err(|e| e.to_string())?;
    let runs = args.runs.clamp(1, 20);
    let peers = args.peers.clone();
    if peers.is_empty() {
        return Err("no servers".into());
    }
    let new_series = |what| Series {
        what,
        values: vec![Vec::new(); peers.len()],
    };
    // Fixed lengths: each load's row has exactly one value per series.
    let mut idle_series: [Series; 3] = [
        new_series("idle bytes per connection (RSS delta / connections)"),
        new_series("idle CPU us per connection-second"),
        new_series("idle Node heapUsed delta per connection (B)"),
    ];
    let mut echo_series: [Series; 4] = [
        new_series("echo requests/s"),
        new_series("echo p50 ms"),
        new_series("echo p99 ms"),
        new_series("echo server CPU us per request"),
    ];
    let mut cast_series: [Series; 5] = [
        new_series("broadcast deliveries/s"),
        new_series("broadcast publish span s"),
        new_series("broadcast p50 ms"),
        new_series("broadcast p99 ms"),
        new_series("broadcast server CPU us per delivery"),
    ];
    let servers = Servers {
        exe: exe.to_path_buf(),
        node: args.node.clone(),
        node_server: args.node_server.clone(),
    };
    for run in 1..=runs {
        for load in &args.only {
            match load {
                Load::Idle => println!("| run | server | connections | opened | alive after hold | open time (s) | RSS (MiB) | bytes/conn | CPU over hold (s) | CPU µs per conn·s | Node heapUsed Δ/conn (B) | Node external Δ/conn (B) |"),
                Load::Echo => println!("| run | server | completed | failed | req/s | p50 (ms) | p99 (ms) | server CPU (s) | CPU µs / request |"),
                Load::Broadcast => println!("| run | server | subscribers | deliveries / expected | deliveries/s | publish span (s) | p50 (ms) | p99 (ms) | server CPU (s) | CPU µs / delivery |"),
            }
            println!(
                "|{}",
                "---|".repeat(match load {
                    Load::Idle => 12,
                    Load::Echo => 9,
                    Load::Broadcast => 9,
                })
            );
            for (i, &peer) in peers.iter().enumerate() {
                match load {
                    Load::Idle => {
                        let config = IdleConfig::new(args.connections, sources.clone());
                        let hold = Duration::from_secs(args.hold_secs.clamp(1, 600));
                        let row =
                            idle_once(&servers, peer, &config, hold, args.ping_interval_ms).await?;
                        println!("| {run} | {} | {} |", peer.name(), row.cells);
                        push(&mut idle_series, row.figures, i);
                    }
                    Load::Echo => {
                        let config = EchoConfig {
                            sources: sources.clone(),
                            ..EchoConfig::new(args.echo_connections, args.echo_requests)
                        };
                        let (mut report, cpu) = echo_once(&servers, peer, &config).await?;
                        let (p50, p99) = (
                            report.latencies.percentile(50.0),
                            report.latencies.percentile(99.0),
                        );
                        let per_request = cpu * 1e6 / report.completed.max(1) as f64;
                        println!(
                            "| {run} | {} | {} | {} | {:.0} | {} | {} | {cpu:.2} | {per_request:.1} |",
                            peer.name(),
                            report.completed,
                            report.failed,
                            report.requests_per_sec(),
                            ms(p50),
                            ms(p99),
                        );
                        if let Some(e) = &report.first_error {
                            eprintln!("{} echo: first failure: {e}", peer.name());
                        }
                        let row: [f64; 4] = [
                            report.requests_per_sec(),
                            millis(p50),
                            millis(p99),
                            per_request,
                        ];
                        push(&mut echo_series, row, i);
                    }
                    Load::Broadcast => {
                        let config = BroadcastConfig {
                            sources: sources.clone(),
                            ..BroadcastConfig::new(args.subscribers, args.messages, args.rate)
                        };
                        let (mut report, cpu) = broadcast_once(&servers, peer, &config).await?;
                        let (p50, p99) = (
                            report.latencies.percentile(50.0),
                            report.latencies.percentile(99.0),
                        );
                        let per_delivery = cpu * 1e6 / report.deliveries.max(1) as f64;
                        // How long the server took to issue every publication
                        // (first to last stamp; (M - 1) / X s when it keeps
                        // up): a server whose publishing falls behind
                        // stamps late, and its latency leaves that wait out.
                        let span = report.publish_span.map_or(f64::NAN, |d| d.as_secs_f64());
                        println!(
                            "| {run} | {} | {} | {} / {} | {:.0} | {span:.2} | {} | {} | {cpu:.2} | {per_delivery:.2} |",
                            peer.name(),
                            report.subscribers,
                            report.deliveries,
                            report.expected,
                            report.deliveries_per_sec(),
                            ms(p50),
                            ms(p99),
                        );
                        if let Some(e) = &report.first_error {
                            eprintln!("{} broadcast: first problem: {e}", peer.name());
                        }
                        let row: [f64; 5] = [
                            report.deliveries_per_sec(),
                            span,
                            millis(p50),
                            millis(p99),
                            per_delivery,
                        ];
                        push(&mut cast_series, row, i);
                    }
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
    for (load, series) in [
        (Load::Idle, &idle_series[..]),
        (Load::Echo, &echo_series[..]),
        (Load::Broadcast, &cast_series[..]),
    ] {
        if args.only.contains(&load) {
            for one in series {
                print_median(one, &peers);
            }
        }
    }
    Ok(())
}

/// Add one run's row to server `i`'s values: as many values as series,
/// checked by the compiler.
fn push<const N: usize>(series: &mut [Series; N], row: [f64; N], i: usize) {
    for (series, value) in series.iter_mut().zip(row) {
        series.values[i].push(value);
    }
}

fn millis(d: Option<Duration>) -> f64 {
    d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
}

/// `MEDIAN what: belay X; floor Y (R× belay) [run values]; …`: servers
/// without a value (Node's heap for the Rust servers) are left out, and
/// the ratio only where the baseline has one.
fn print_median(series: &Series, peers: &[Peer]) {
    let medians: Vec<f64> = series
        .values
        .iter()
        .map(|v| median(v).unwrap_or(f64::NAN))
        .collect();
    let base = medians[0];
    let parts: Vec<String> = peers
        .iter()
        .zip(&medians)
        .zip(&series.values)
        .filter(|((_, m), _)| m.is_finite())
        .map(|((peer, m), runs)| {
            let runs: Vec<String> = runs.iter().map(|v| format!("{v:.3}")).collect();
            let ratio = if base.is_finite() && base != 0.0 {
                format!(" ({:.2}x {})", m / base, peers[0].name())
            } else {
                String::new()
            };
            format!("{} {m:.3}{ratio} [{}]", peer.name(), runs.join(", "))
        })
        .collect();
    println!("MEDIAN {}: {}", series.what, parts.join("; "));
}

/// Where the servers' programs are.
struct Servers {
    exe: PathBuf,
    node: PathBuf,
    node_server: PathBuf,
}

impl Servers {
    fn start(&self, peer: Peer, ping_interval_ms: u64) -> Result<(ServerChild, Target), String> {
        let command = peer.command(&self.exe, &self.node, &self.node_server, ping_interval_ms);
        let server = ServerChild::start(command)
            .map_err(|e| format!("cannot start {}: {e}", peer.name()))?;
        let target = peer.target(server.addr).map_err(|e| e.to_string())?;
        Ok((server, target))
    }
}

/// One idle measurement: the table's cells and the figures (bytes per
/// connection, CPU µs per connection-second, Node heapUsed per connection).
struct IdleRow {
    cells: String,
    figures: [f64; 3],
}

/// Open the fleet on a fresh server, let it settle 2 s, hold it; RSS delta
/// from the fresh process to the end of the hold, CPU over the hold.
async fn idle_once(
    servers: &Servers,
    peer: Peer,
    config: &IdleConfig,
    hold: Duration,
    ping_interval_ms: u64,
) -> Result<IdleRow, String> {
    let (mut server, target) = servers.start(peer, ping_interval_ms)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let base = server.sample().map_err(|e| e.to_string())?;
    let node_base = node_memory(&mut server, peer)?;
    let fleet = match peer {
        Peer::Socketio => Fleet::SocketIo(socketio_load::open_idle(&target, config).await),
        _ => Fleet::Belay(idle::open(&target, config).await),
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let before = server.sample().map_err(|e| e.to_string())?;
    tokio::time::sleep(hold).await;
    let after = server.sample().map_err(|e| e.to_string())?;
    let node_after = node_memory(&mut server, peer)?;
    let (opened, failed, open_time, first_error) = fleet.outcome();
    let alive = fleet.alive();
    let per = |delta: f64| delta / alive.max(1) as f64;
    let bytes = per(after.rss_kib.saturating_sub(base.rss_kib) as f64 * 1024.0);
    let cpu_s = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK;
    let cpu_us = cpu_s * 1e6 / (alive.max(1) as f64 * hold.as_secs_f64());
    let (heap, external) = match (node_base, node_after) {
        (Some(a), Some(b)) => (per(b.heap_used - a.heap_used), per(b.external - a.external)),
        _ => (f64::NAN, f64::NAN),
    };
    let node_cell = |v: f64| {
        if v.is_nan() {
            "–".to_owned()
        } else {
            format!("{v:.0}")
        }
    };
    let cells = format!(
        "{} | {opened} (failed {failed}) | {alive} | {:.2} | {:.1} | {bytes:.0} | {cpu_s:.2} | {cpu_us:.3} | {} | {}",
        config.connections,
        open_time.as_secs_f64(),
        after.rss_kib as f64 / 1024.0,
        node_cell(heap),
        node_cell(external),
    );
    if let Some(e) = first_error {
        eprintln!("{} idle: first failure: {e}", peer.name());
    }
    fleet.close().await;
    drop(server);
    Ok(IdleRow {
        cells,
        figures: [bytes, cpu_us, heap],
    })
}

fn node_memory(server: &mut ServerChild, peer: Peer) -> Result<Option<NodeMemory>, String> {
    if !peer.is_node() {
        return Ok(None);
    }
    server.node_memory().map(Some).map_err(|e| e.to_string())
}

/// Either kind of idle fleet.
enum Fleet {
    Belay(idle::Fleet),
    SocketIo(socketio_load::Fleet),
}

impl Fleet {
    fn alive(&self) -> usize {
        match self {
            Fleet::Belay(f) => f.alive(),
            Fleet::SocketIo(f) => f.alive(),
        }
    }

    fn outcome(&self) -> (usize, usize, Duration, Option<String>) {
        match self {
            Fleet::Belay(f) => (f.opened, f.failed, f.open_time, f.first_error.clone()),
            Fleet::SocketIo(f) => (f.opened, f.failed, f.open_time, f.first_error.clone()),
        }
    }

    async fn close(self) {
        match self {
            Fleet::Belay(f) => f.close().await,
            Fleet::SocketIo(f) => f.close().await,
        }
    }
}

/// One echo load on a fresh server; its report and the server's CPU
/// seconds over it (opening the sessions included).
async fn echo_once(
    servers: &Servers,
    peer: Peer,
    config: &EchoConfig,
) -> Result<(EchoReport, f64), String> {
    let (server, target) = servers.start(peer, BUSY_PING_INTERVAL_MS)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = server.sample().map_err(|e| e.to_string())?;
    let report = match peer {
        Peer::Socketio => socketio_load::echo(&target, config).await,
        _ => echo::run(&target, config).await,
    }
    .map_err(|e| format!("{} echo: {e}", peer.name()))?;
    let after = server.sample().map_err(|e| e.to_string())?;
    Ok((report, cpu_seconds(before, after)))
}

/// One broadcast load on a fresh server; its report and the server's CPU
/// seconds over it (opening and subscribing the sessions included).
async fn broadcast_once(
    servers: &Servers,
    peer: Peer,
    config: &BroadcastConfig,
) -> Result<(BroadcastReport, f64), String> {
    let (server, target) = servers.start(peer, BUSY_PING_INTERVAL_MS)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = server.sample().map_err(|e| e.to_string())?;
    let report = match peer {
        Peer::Socketio => socketio_load::broadcast(&target, config).await,
        _ => broadcast::run(&target, config).await,
    }
    .map_err(|e| format!("{} broadcast: {e}", peer.name()))?;
    let after = server.sample().map_err(|e| e.to_string())?;
    Ok((report, cpu_seconds(before, after)))
}

fn cpu_seconds(
    before: crate::measure::procfs::ProcSample,
    after: crate::measure::procfs::ProcSample,
) -> f64 {
    after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK
}
