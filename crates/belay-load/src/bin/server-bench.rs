//! `server-bench`: Belay against the bare tokio-websockets floor, same load,
//! same run. Each server runs in its own child process (this binary with
//! `serve`), so its RSS and CPU are read from `/proc/PID` without the load
//! client's. Run it through `scripts/bench-server.sh`, which raises the
//! descriptor limit.
//!
//! `http-publish` runs the broadcast load twice per run on the same Belay
//! server (with belay-standalone's HTTP API mounted): published with
//! `Server::publish` (`bench.publish`), then through `POST /api/publish`
//! from the load process, and reports HTTP / Rust.
//!
//! With `--baseline-exe PATH` the floor's place is taken by the Belay
//! server of another `server-bench` binary (a build of an earlier commit):
//! the same interleaved runs then compare the new server with the old one
//! (`scripts/bench-regression.sh`).
#![forbid(unsafe_code)]

/// The allocator `belay serve` uses too (see crates/belay-cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use belay_load::broadcast::{self, BroadcastConfig, BroadcastReport, Publisher};
use belay_load::echo::{self, EchoConfig};
use belay_load::floor::{self, FloorConfig};
use belay_load::http_publish::HttpPublisher;
use belay_load::idle::{self, IdleConfig};
use belay_load::procfs::{self, CLK_TCK};
use belay_load::stats::{median, ms};
use belay_load::target::{parse_sources, Target};
use belay_proto::message::Codec;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(name = "server-bench", about = "Belay server vs the bare codec floor")]
struct Cli {
    /// Compare with the Belay server of this `server-bench` binary (an
    /// earlier build) instead of the floor.
    #[arg(long, global = true)]
    baseline_exe: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Kind {
    Belay,
    Floor,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// (internal) Serve one kind on 127.0.0.1:0, print `LISTEN addr`, exit when stdin closes.
    Serve {
        #[arg(long, value_enum)]
        kind: Kind,
        #[arg(long, default_value_t = 10_000)]
        ping_interval_ms: u64,
        /// Mount the HTTP server API (belay-standalone) with this key (Belay only).
        #[arg(long)]
        api_key: Option<String>,
    },
    /// Idle sessions held with heartbeats: RSS and CPU per connection.
    Idle {
        /// Connection counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "10000")]
        counts: Vec<usize>,
        /// Seconds to hold them (CPU is measured over the hold).
        #[arg(long, default_value_t = 30)]
        hold_secs: u64,
        #[arg(long, default_value = "127.0.0.1-127.0.0.40")]
        sources: String,
        #[arg(long, default_value_t = 10_000)]
        ping_interval_ms: u64,
        #[arg(long, default_value_t = 1)]
        runs: usize,
    },
    /// Echo round trips.
    Echo {
        #[arg(long, default_value_t = 100)]
        connections: usize,
        #[arg(long, default_value_t = 1_000)]
        requests: usize,
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Broadcast fan-out.
    Broadcast {
        #[arg(long, default_value_t = 10_000)]
        subscribers: usize,
        #[arg(long, default_value_t = 100)]
        messages: u64,
        #[arg(long, default_value_t = 25.0)]
        rate: f64,
        #[arg(long, default_value = "127.0.0.1-127.0.0.40")]
        sources: String,
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Broadcast fan-out published two ways on the same server, same
    /// subscribers: with `Server::publish` (`bench.publish`) and through
    /// the HTTP API (`POST /api/publish` from the load process); HTTP / Rust.
    HttpPublish {
        #[arg(long, default_value_t = 10_000)]
        subscribers: usize,
        #[arg(long, default_value_t = 100)]
        messages: u64,
        #[arg(long, default_value_t = 25.0)]
        rate: f64,
        /// Keep-alive HTTP connections the publisher uses (one request at a
        /// time on each).
        #[arg(long, default_value_t = 4)]
        http_connections: usize,
        #[arg(long, default_value = "127.0.0.1-127.0.0.40")]
        sources: String,
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// The SSE fallback against WebSocket, same server build, same run:
    /// idle bytes per session (each on a fresh server), publish→delivery
    /// to subscribers over both at once, request round trips over each.
    Sse {
        #[arg(long, default_value_t = 2_000)]
        connections: usize,
        #[arg(long, default_value_t = 10)]
        hold_secs: u64,
        /// Subscribers over each transport.
        #[arg(long, default_value_t = 500)]
        subscribers: usize,
        #[arg(long, default_value_t = 200)]
        messages: u64,
        #[arg(long, default_value_t = 50.0)]
        rate: f64,
        #[arg(long, default_value_t = 500)]
        requests: usize,
        #[arg(long, default_value = "127.0.0.1-127.0.0.40")]
        sources: String,
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// The binary codec against JSON on the same server build, same run
    /// (each load on a fresh server): echo requests (server CPU per
    /// request, latency) and broadcast to subscribers (server CPU per
    /// delivery, publish→delivery latency).
    Codec {
        #[arg(long, default_value_t = 100)]
        connections: usize,
        #[arg(long, default_value_t = 2_000)]
        requests: usize,
        #[arg(long, default_value_t = 10_000)]
        subscribers: usize,
        #[arg(long, default_value_t = 250)]
        messages: u64,
        #[arg(long, default_value_t = 25.0)]
        rate: f64,
        #[arg(long, default_value = "127.0.0.1-127.0.0.40")]
        sources: String,
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Belay, the floor, a Node `ws` server and socket.io under the same
    /// idle, echo and broadcast loads, same run (`npm ci` in peers/bench first).
    Peers(belay_load::peers::bench::PeersArgs),
    /// Channels: what one subscribed channel costs, and whether the memory
    /// comes back once every subscriber left (rounds of subscribe + leave).
    Channels {
        #[arg(long, default_value_t = 100)]
        sessions: usize,
        /// Channels per session (at most 1 000, the per-connection limit).
        #[arg(long, default_value_t = 1_000)]
        per_session: usize,
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        #[arg(long, default_value = "127.0.0.1-127.0.0.40")]
        sources: String,
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
}

fn main() -> Result<(), String> {
    let cli = Cli::parse();
    if let Some(exe) = cli.baseline_exe.clone() {
        let _ = BASELINE.set(exe);
    }
    let runtime = belay_load::server_runtime::build().map_err(|e| e.to_string())?;
    match cli.command {
        Cmd::Serve {
            kind,
            ping_interval_ms,
            api_key,
        } => runtime.block_on(serve(
            kind,
            Duration::from_millis(ping_interval_ms),
            api_key,
        )),
        Cmd::Idle {
            counts,
            hold_secs,
            sources,
            ping_interval_ms,
            runs,
        } => {
            let sources = parse_sources(&sources).map_err(|e| e.to_string())?;
            runtime.block_on(bench_idle(
                &counts,
                Duration::from_secs(hold_secs.min(600)),
                &sources,
                ping_interval_ms,
                runs.clamp(1, 10),
            ))
        }
        Cmd::Echo {
            connections,
            requests,
            runs,
        } => runtime.block_on(bench_echo(connections, requests, runs.clamp(1, 10))),
        Cmd::Broadcast {
            subscribers,
            messages,
            rate,
            sources,
            runs,
        } => {
            let sources = parse_sources(&sources).map_err(|e| e.to_string())?;
            let config = BroadcastConfig {
                sources,
                ..BroadcastConfig::new(subscribers, messages, rate)
            };
            runtime.block_on(bench_broadcast(&config, runs.clamp(1, 10)))
        }
        Cmd::HttpPublish {
            subscribers,
            messages,
            rate,
            http_connections,
            sources,
            runs,
        } => {
            let sources = parse_sources(&sources).map_err(|e| e.to_string())?;
            let config = BroadcastConfig {
                sources,
                ..BroadcastConfig::new(subscribers, messages, rate)
            };
            runtime.block_on(bench_http_publish(
                &config,
                http_connections.clamp(1, 64),
                runs.clamp(1, 10),
            ))
        }
        Cmd::Sse {
            connections,
            hold_secs,
            subscribers,
            messages,
            rate,
            requests,
            sources,
            runs,
        } => {
            let sources = parse_sources(&sources).map_err(|e| e.to_string())?;
            runtime.block_on(bench_sse(
                SseBench {
                    connections: connections.clamp(1, 20_000),
                    hold: Duration::from_secs(hold_secs.clamp(1, 600)),
                    subscribers: subscribers.clamp(1, 5_000),
                    messages: messages.clamp(1, 10_000),
                    rate,
                    requests: requests.clamp(1, 100_000),
                },
                &sources,
                runs.clamp(1, 10),
            ))
        }
        Cmd::Codec {
            connections,
            requests,
            subscribers,
            messages,
            rate,
            sources,
            runs,
        } => {
            let sources = parse_sources(&sources).map_err(|e| e.to_string())?;
            let echo = EchoConfig::new(connections, requests);
            let broadcast = BroadcastConfig {
                sources,
                ..BroadcastConfig::new(subscribers, messages, rate)
            };
            runtime.block_on(bench_codec(&echo, &broadcast, runs.clamp(1, 10)))
        }
        Cmd::Peers(args) => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            runtime.block_on(belay_load::peers::bench::run(args, &exe))
        }
        Cmd::Channels {
            sessions,
            per_session,
            rounds,
            sources,
            runs,
        } => {
            let sources = parse_sources(&sources).map_err(|e| e.to_string())?;
            runtime.block_on(bench_channels(
                sessions.clamp(1, 1_000),
                per_session.clamp(1, 1_000),
                rounds.clamp(1, 20),
                &sources,
                runs.clamp(1, 10),
            ))
        }
    }
}

/// What `server-bench sse` measures.
struct SseBench {
    connections: usize,
    hold: Duration,
    subscribers: usize,
    messages: u64,
    rate: f64,
    requests: usize,
}

async fn bench_sse(bench: SseBench, sources: &[IpAddr], runs: usize) -> Result<(), String> {
    use belay_load::sse_compare;
    println!("| run | transport | idle sessions alive | idle B/session | broadcast p50 (ms) | broadcast p99 (ms) | deliveries missing | request p50 (ms) | request p99 (ms) |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let names = ["websocket", "sse"];
    let mut idle: [Vec<f64>; 2] = Default::default();
    let mut p50: [Vec<f64>; 2] = Default::default();
    let mut p99: [Vec<f64>; 2] = Default::default();
    let mut rtt50: [Vec<f64>; 2] = Default::default();
    let mut rtt99: [Vec<f64>; 2] = Default::default();
    let millis = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    for run in 1..=runs {
        // Idle: each transport on a fresh server.
        let mut held = [(0usize, 0.0f64); 2];
        for (i, slot) in held.iter_mut().enumerate() {
            let server = ServerProcess::start(Kind::Belay, 10_000)?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let base = server.sample()?.rss_kib;
            let mut config = IdleConfig::new(bench.connections, sources.to_vec());
            config.sse = i == 1;
            let fleet = idle::open(&server.target, &config).await;
            if let Some(e) = &fleet.first_error {
                eprintln!("{} idle: first failure: {e}", names[i]);
            }
            tokio::time::sleep(bench.hold).await;
            let alive = fleet.alive();
            *slot = (
                alive,
                server.sample()?.rss_kib.saturating_sub(base) as f64 * 1024.0,
            );
            fleet.close().await;
            idle[i].push(slot.1 / alive.max(1) as f64);
        }
        // Broadcast to both at once, then round trips, on one server.
        let server = ServerProcess::start(Kind::Belay, 25_000)?;
        let (mut ws, mut sse, missing) = sse_compare::broadcast_both(
            &server.target,
            bench.subscribers,
            bench.messages,
            bench.rate,
            sources,
        )
        .await
        .map_err(|e| e.to_string())?;
        let (mut ws_rtt, mut sse_rtt) = sse_compare::echo_both(&server.target, bench.requests)
            .await
            .map_err(|e| e.to_string())?;
        drop(server);
        for (i, (lat, rtt)) in [(&mut ws, &mut ws_rtt), (&mut sse, &mut sse_rtt)]
            .into_iter()
            .enumerate()
        {
            let (a, b) = (millis(lat.percentile(50.0)), millis(lat.percentile(99.0)));
            let (c, d) = (millis(rtt.percentile(50.0)), millis(rtt.percentile(99.0)));
            p50[i].push(a);
            p99[i].push(b);
            rtt50[i].push(c);
            rtt99[i].push(d);
            println!(
                "| {run} | {} | {} | {:.0} | {a:.2} | {b:.2} | {} | {c:.3} | {d:.3} |",
                names[i],
                held[i].0,
                held[i].1 / held[i].0.max(1) as f64,
                if i == 1 {
                    missing.to_string()
                } else {
                    "(both)".into()
                },
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    summary_of("sse: idle bytes per session", names, &idle);
    summary_of("sse: broadcast p50 ms", names, &p50);
    summary_of("sse: broadcast p99 ms", names, &p99);
    summary_of("sse: request round trip p50 ms", names, &rtt50);
    summary_of("sse: request round trip p99 ms", names, &rtt99);
    Ok(())
}

/// Server RSS after letting it settle for `settle`.
async fn settled_rss(server: &ServerProcess, settle: Duration) -> Result<u64, String> {
    tokio::time::sleep(settle).await;
    Ok(server.sample()?.rss_kib * 1024)
}

async fn bench_channels(
    sessions: usize,
    per_session: usize,
    rounds: usize,
    sources: &[IpAddr],
    runs: usize,
) -> Result<(), String> {
    use belay_load::channels;
    let bound = Duration::from_secs(120);
    let settle = Duration::from_secs(2);
    let channels_per_round = sessions * per_session;
    println!(
        "| run | channels | RSS idle | RSS sessions | per channel | RSS after leaving (round 1 → {rounds}) | after closing |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut per_channel = Vec::new();
    let mut returned = Vec::new();
    for run in 1..=runs {
        let server = ServerProcess::start(Kind::Belay, 25_000)?;
        let idle = settled_rss(&server, settle).await?;
        let mut open = channels::open_sessions(&server.target, sessions, sources, bound)
            .await
            .map_err(|e| e.to_string())?;
        let with_sessions = settled_rss(&server, settle).await?;
        let mut after_rounds = Vec::new();
        let mut subscribed = 0;
        for round in 0..rounds {
            let confirmed = channels::subscribe_all(&mut open, round, per_session, bound)
                .await
                .map_err(|e| e.to_string())?;
            if confirmed != channels_per_round {
                return Err(format!("{confirmed} of {channels_per_round} confirmed"));
            }
            if round == 0 {
                subscribed = settled_rss(&server, settle).await?;
            }
            channels::unsubscribe_all(&mut open, round, per_session, bound)
                .await
                .map_err(|e| e.to_string())?;
            let held = channels::metric(&server.target, "belay_channels")
                .await
                .map_err(|e| e.to_string())?;
            if held != 0.0 {
                return Err(format!("{held} channels still held after leaving"));
            }
            after_rounds.push(settled_rss(&server, settle).await?);
        }
        drop(open);
        let closed = settled_rss(&server, Duration::from_secs(5)).await?;
        let cost = subscribed.saturating_sub(with_sessions) as f64 / channels_per_round as f64;
        per_channel.push(cost);
        let last = after_rounds.last().copied().unwrap_or(with_sessions);
        returned.push(last as f64 / with_sessions as f64);
        let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
        println!(
            "| {run} | {channels_per_round} × {rounds} | {} | {} | {cost:.0} B | {} | {} |",
            mib(idle),
            mib(with_sessions),
            after_rounds
                .iter()
                .map(|b| mib(*b))
                .collect::<Vec<_>>()
                .join(" → "),
            mib(closed),
        );
    }
    println!(
        "MEDIAN channels per_channel_bytes={:.0} rss_after_rounds_vs_sessions={:.3}",
        median(&per_channel).unwrap_or(f64::NAN),
        median(&returned).unwrap_or(f64::NAN)
    );
    Ok(())
}

async fn serve(kind: Kind, ping_interval: Duration, api_key: Option<String>) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("LISTEN {addr}");
    // Exit when the parent closes our stdin (or dies).
    tokio::spawn(async {
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
        std::process::exit(0);
    });
    match kind {
        Kind::Belay => {
            let server = belay_load::bench_server::build(ping_interval);
            let router = match &api_key {
                Some(key) => server.router().merge(belay_standalone::api::router(
                    &server,
                    key,
                    API_MAX_BODY,
                    None,
                )),
                None => server.router(),
            };
            server
                .serve(listener, router)
                .await
                .map_err(|e| e.to_string())
        }
        Kind::Floor => {
            let config = FloorConfig {
                ping_interval,
                ..FloorConfig::default()
            };
            floor::serve(listener, config).await;
            Ok(())
        }
    }
}

/// The bench server's longest API body (`api.max_body_bytes`' default).
const API_MAX_BODY: usize = 1 << 20;

/// A server child process.
struct ServerProcess {
    child: Child,
    target: Target,
}

impl ServerProcess {
    fn start(kind: Kind, ping_interval_ms: u64) -> Result<ServerProcess, String> {
        ServerProcess::start_with(kind, ping_interval_ms, None)
    }

    /// With `api_key`: this binary's Belay server with the HTTP API mounted.
    fn start_with(
        kind: Kind,
        ping_interval_ms: u64,
        api_key: Option<&str>,
    ) -> Result<ServerProcess, String> {
        let (exe, kind_arg) = match (kind, BASELINE.get()) {
            (Kind::Floor, Some(baseline)) => (baseline.clone(), "belay"),
            (Kind::Floor, None) => (std::env::current_exe().map_err(|e| e.to_string())?, "floor"),
            (Kind::Belay, _) => (std::env::current_exe().map_err(|e| e.to_string())?, "belay"),
        };
        let (exe, kind_arg) = match api_key {
            Some(_) => (std::env::current_exe().map_err(|e| e.to_string())?, "belay"),
            None => (exe, kind_arg),
        };
        let mut command = Command::new(exe);
        command
            .args(["serve", "--kind", kind_arg, "--ping-interval-ms"])
            .arg(ping_interval_ms.to_string());
        if let Some(key) = api_key {
            command.args(["--api-key", key]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let addr: SocketAddr = line
            .trim()
            .strip_prefix("LISTEN ")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("unexpected server output {line:?}"))?;
        let target = Target::local(addr).map_err(|e| e.to_string())?;
        Ok(ServerProcess { child, target })
    }

    fn sample(&self) -> Result<procfs::ProcSample, String> {
        procfs::sample(self.child.id()).map_err(|e| e.to_string())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The other binary whose Belay server stands in for the floor, if any.
static BASELINE: OnceLock<PathBuf> = OnceLock::new();

/// What the first server of each pair is called: the floor, or the
/// baseline build.
fn reference() -> &'static str {
    if BASELINE.get().is_some() {
        "baseline"
    } else {
        "floor"
    }
}

fn kinds() -> [(Kind, &'static str); 2] {
    [(Kind::Floor, reference()), (Kind::Belay, "belay")]
}

async fn bench_idle(
    counts: &[usize],
    hold: Duration,
    sources: &[IpAddr],
    ping_interval_ms: u64,
    runs: usize,
) -> Result<(), String> {
    println!("| server | connections | opened | open time (s) | RSS (MiB) | bytes/conn | CPU over hold (s) | CPU µs per conn·s |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for &n in counts {
        let mut per_conn = [Vec::new(), Vec::new()];
        let mut cpu = [Vec::new(), Vec::new()];
        for _ in 0..runs {
            for (i, (kind, name)) in kinds().into_iter().enumerate() {
                let server = ServerProcess::start(kind, ping_interval_ms)?;
                tokio::time::sleep(Duration::from_millis(300)).await;
                let base = server.sample()?;
                let fleet = idle::open(&server.target, &IdleConfig::new(n, sources.to_vec())).await;
                // Let handshakes settle before the hold starts.
                tokio::time::sleep(Duration::from_secs(2)).await;
                let before = server.sample()?;
                tokio::time::sleep(hold).await;
                let after = server.sample()?;
                let alive = fleet.alive();
                let rss_delta = after.rss_kib.saturating_sub(base.rss_kib) as f64 * 1024.0;
                let bytes = rss_delta / alive.max(1) as f64;
                let cpu_s = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK;
                let cpu_us = cpu_s * 1e6 / (alive.max(1) as f64 * hold.as_secs_f64());
                println!(
                    "| {name} | {n} | {} (alive {alive}, failed {}) | {:.2} | {:.1} | {:.0} | {:.2} | {:.3} |",
                    fleet.opened,
                    fleet.failed,
                    fleet.open_time.as_secs_f64(),
                    after.rss_kib as f64 / 1024.0,
                    bytes,
                    cpu_s,
                    cpu_us
                );
                if let Some(e) = &fleet.first_error {
                    eprintln!("{name} n={n}: first failure: {e}");
                }
                per_conn[i].push(bytes);
                cpu[i].push(cpu_us);
                fleet.close().await;
                drop(server);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        summary(&format!("idle {n}: bytes/conn"), &per_conn);
        summary(&format!("idle {n}: CPU µs per conn·s"), &cpu);
    }
    Ok(())
}

fn summary(what: &str, values: &[Vec<f64>; 2]) {
    summary_of(what, [reference(), "belay"], values);
}

/// `MEDIAN what: A a, B b, B/A ratio (runs: …)` for the two series.
fn summary_of(what: &str, [first, second]: [&str; 2], values: &[Vec<f64>; 2]) {
    let a = median(&values[0]).unwrap_or(f64::NAN);
    let b = median(&values[1]).unwrap_or(f64::NAN);
    println!(
        "MEDIAN {what}: {first} {a:.3}, {second} {b:.3}, {second}/{first} {:.2}x (runs: {first} {:?}, {second} {:?})",
        b / a,
        values[0],
        values[1]
    );
}

async fn bench_echo(connections: usize, requests: usize, runs: usize) -> Result<(), String> {
    println!("| server | run | completed | failed | req/s | p50 (ms) | p99 (ms) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut rps = [Vec::new(), Vec::new()];
    let mut p50 = [Vec::new(), Vec::new()];
    let mut p99 = [Vec::new(), Vec::new()];
    for run in 1..=runs {
        for (i, (kind, name)) in kinds().into_iter().enumerate() {
            let server = ServerProcess::start(kind, 25_000)?;
            let mut report = echo::run(&server.target, &EchoConfig::new(connections, requests))
                .await
                .map_err(|e| e.to_string())?;
            let (a, b) = (
                report.latencies.percentile(50.0),
                report.latencies.percentile(99.0),
            );
            println!(
                "| {name} | {run} | {} | {} | {:.0} | {} | {} |",
                report.completed,
                report.failed,
                report.requests_per_sec(),
                ms(a),
                ms(b)
            );
            if let Some(e) = &report.first_error {
                eprintln!("{name}: first failure: {e}");
            }
            rps[i].push(report.requests_per_sec());
            p50[i].push(a.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            p99[i].push(b.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
        }
    }
    summary("echo req/s", &rps);
    summary("echo p50 ms", &p50);
    summary("echo p99 ms", &p99);
    Ok(())
}

async fn bench_broadcast(config: &BroadcastConfig, runs: usize) -> Result<(), String> {
    println!("| server | run | subscribers | deliveries / expected | deliveries/s | p50 (ms) | p99 (ms) | server CPU (s) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut dps = [Vec::new(), Vec::new()];
    let mut p50 = [Vec::new(), Vec::new()];
    let mut p99 = [Vec::new(), Vec::new()];
    for run in 1..=runs {
        for (i, (kind, name)) in kinds().into_iter().enumerate() {
            let server = ServerProcess::start(kind, 25_000)?;
            let started = Instant::now();
            let before = server.sample()?;
            let mut report = broadcast::run(&server.target, config)
                .await
                .map_err(|e| e.to_string())?;
            let after = server.sample()?;
            let (a, b) = (
                report.latencies.percentile(50.0),
                report.latencies.percentile(99.0),
            );
            println!(
                "| {name} | {run} | {} | {} / {} | {:.0} | {} | {} | {:.2} |",
                report.subscribers,
                report.deliveries,
                report.expected,
                report.deliveries_per_sec(),
                ms(a),
                ms(b),
                after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK
            );
            if let Some(e) = &report.first_error {
                eprintln!(
                    "{name}: first problem: {e} ({:.1} s)",
                    started.elapsed().as_secs_f64()
                );
            }
            dps[i].push(report.deliveries_per_sec());
            p50[i].push(a.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            p99[i].push(b.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            drop(server);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    summary("broadcast deliveries/s", &dps);
    summary("broadcast p50 ms", &p50);
    summary("broadcast p99 ms", &p99);
    Ok(())
}

/// `server-bench codec`: JSON then binary in each run, each load on a
/// fresh Belay server.
async fn bench_codec(
    echo_config: &EchoConfig,
    broadcast_config: &BroadcastConfig,
    runs: usize,
) -> Result<(), String> {
    const CODECS: [(Codec, &str); 2] = [(Codec::Json, "json"), (Codec::Binary, "binary")];
    println!("| run | codec | echo req/s | echo p50 (ms) | echo p99 (ms) | CPU µs / request | deliveries / expected | broadcast p50 (ms) | broadcast p99 (ms) | CPU µs / delivery |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut figures: [[Vec<f64>; 2]; 7] = Default::default();
    for run in 1..=runs {
        for (i, (codec, name)) in CODECS.into_iter().enumerate() {
            let server = ServerProcess::start(Kind::Belay, 25_000)?;
            let before = server.sample()?;
            let config = EchoConfig {
                codec,
                ..echo_config.clone()
            };
            let mut echoed = echo::run(&server.target, &config)
                .await
                .map_err(|e| e.to_string())?;
            let after = server.sample()?;
            let echo_cpu = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK;
            drop(server);
            let server = ServerProcess::start(Kind::Belay, 25_000)?;
            let config = BroadcastConfig {
                codec,
                ..broadcast_config.clone()
            };
            let (mut broadcast, cast_cpu) = broadcast_once(&server, &config).await?;
            drop(server);
            let millis = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
            let row = [
                echoed.requests_per_sec(),
                millis(echoed.latencies.percentile(50.0)),
                millis(echoed.latencies.percentile(99.0)),
                echo_cpu * 1e6 / echoed.completed.max(1) as f64,
                millis(broadcast.latencies.percentile(50.0)),
                millis(broadcast.latencies.percentile(99.0)),
                cast_cpu * 1e6 / broadcast.deliveries.max(1) as f64,
            ];
            println!(
                "| {run} | {name} | {:.0} | {:.3} | {:.3} | {:.2} | {} / {} | {:.2} | {:.2} | {:.3} |",
                row[0], row[1], row[2], row[3], broadcast.deliveries, broadcast.expected, row[4], row[5], row[6]
            );
            for problem in [&echoed.first_error, &broadcast.first_error]
                .into_iter()
                .flatten()
            {
                eprintln!("{name}: first problem: {problem}");
            }
            for (series, value) in figures.iter_mut().zip(row) {
                series[i].push(value);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let names = [
        "echo req/s",
        "echo p50 ms",
        "echo p99 ms",
        "echo server CPU us per request",
        "broadcast p50 ms",
        "broadcast p99 ms",
        "broadcast server CPU us per delivery",
    ];
    for (what, series) in names.into_iter().zip(&figures) {
        summary_of(what, ["json", "binary"], series);
    }
    Ok(())
}

/// The API key of the `http-publish` bench server.
const BENCH_API_KEY: &str = "server-bench-api-key-0123456789";

/// One broadcast run on a fresh server; its report and the server's CPU
/// seconds over it.
async fn broadcast_once(
    server: &ServerProcess,
    config: &BroadcastConfig,
) -> Result<(BroadcastReport, f64), String> {
    let before = server.sample()?;
    let report = broadcast::run(&server.target, config)
        .await
        .map_err(|e| e.to_string())?;
    let after = server.sample()?;
    let cpu = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK;
    Ok((report, cpu))
}

async fn bench_http_publish(
    config: &BroadcastConfig,
    http_connections: usize,
    runs: usize,
) -> Result<(), String> {
    let publishers = [
        ("rust", Publisher::Method),
        (
            "http",
            Publisher::Http(HttpPublisher {
                key: BENCH_API_KEY.into(),
                connections: http_connections,
            }),
        ),
    ];
    println!("| publisher | run | subscribers | deliveries / expected | all arrived | deliveries/s | p50 (ms) | p99 (ms) | server CPU (s) | publish span (ms) | publish round trip p50 / p99 (ms) |");
    println!("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    let mut dps = [Vec::new(), Vec::new()];
    let mut p50 = [Vec::new(), Vec::new()];
    let mut p99 = [Vec::new(), Vec::new()];
    let mut cpu = [Vec::new(), Vec::new()];
    let mut span = [Vec::new(), Vec::new()];
    let mut complete = [0usize, 0usize];
    for run in 1..=runs {
        for (i, (name, publisher)) in publishers.iter().enumerate() {
            // The same server for both: this binary's Belay with the API mounted.
            let server = ServerProcess::start_with(Kind::Belay, 25_000, Some(BENCH_API_KEY))?;
            let started = Instant::now();
            let config = BroadcastConfig {
                publisher: publisher.clone(),
                ..config.clone()
            };
            let (mut report, cpu_s) = broadcast_once(&server, &config).await?;
            let (a, b) = (
                report.latencies.percentile(50.0),
                report.latencies.percentile(99.0),
            );
            let all = report.subscribers == config.subscribers
                && report.deliveries == report.expected
                && report.first_error.is_none();
            let round_trip = match report.http.as_mut() {
                Some(http) => format!(
                    "{} / {}",
                    ms(http.round_trips.percentile(50.0)),
                    ms(http.round_trips.percentile(99.0))
                ),
                None => "–".into(),
            };
            println!(
                "| {name} | {run} | {} | {} / {} | {} | {:.0} | {} | {} | {cpu_s:.2} | {} | {round_trip} |",
                report.subscribers,
                report.deliveries,
                report.expected,
                if all { "yes" } else { "NO" },
                report.deliveries_per_sec(),
                ms(a),
                ms(b),
                ms(report.publish_span),
            );
            if let Some(e) = &report.first_error {
                eprintln!(
                    "{name}: first problem: {e} ({:.1} s)",
                    started.elapsed().as_secs_f64()
                );
            }
            complete[i] += usize::from(all);
            dps[i].push(report.deliveries_per_sec());
            p50[i].push(a.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            p99[i].push(b.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            cpu[i].push(cpu_s);
            span[i].push(
                report
                    .publish_span
                    .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
            );
            drop(server);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let names = ["rust", "http"];
    summary_of("http-publish deliveries/s", names, &dps);
    summary_of("http-publish p50 ms", names, &p50);
    summary_of("http-publish p99 ms", names, &p99);
    summary_of("http-publish server CPU s", names, &cpu);
    summary_of("http-publish publish span ms", names, &span);
    println!(
        "ALL DELIVERED http-publish: rust {}/{runs} runs, http {}/{runs} runs",
        complete[0], complete[1]
    );
    Ok(())
}
