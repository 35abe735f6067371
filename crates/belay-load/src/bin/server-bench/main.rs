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
//!
//! Modules: [`server`] (the child processes), [`floor`] (idle, echo and
//! broadcast against the floor), [`codec`], [`http_publish`], [`sse`],
//! [`channels`] (one benchmark each), [`summary`] (the `MEDIAN` lines).
#![forbid(unsafe_code)]

/// The allocator `belay serve` uses too (see crates/belay-cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod channels;
mod codec;
mod floor;
mod http_publish;
mod liveness;
mod server;
mod sse;
mod summary;

use std::path::PathBuf;
use std::time::Duration;

use belay_load::clients::target::parse_sources;
use belay_load::loads::broadcast::BroadcastConfig;
use belay_load::loads::echo::EchoConfig;
use clap::{Parser, Subcommand};

use crate::server::{Kind, BASELINE};
use crate::sse::SseBench;

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
    /// The liveness defaults' cost against the earlier ones (ping 25 s),
    /// same run: server CPU, frames and bytes each way per connection·hour.
    Liveness {
        #[arg(long, default_value_t = 10_000)]
        connections: usize,
        /// Seconds to hold the sessions (measured over the hold).
        #[arg(long, default_value_t = 60)]
        hold_secs: u64,
        #[arg(long, default_value = "127.0.0.1-127.0.0.40")]
        sources: String,
        #[arg(long, default_value_t = 3)]
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
    Peers(belay_load::suites::peers::bench::PeersArgs),
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
    let runtime = belay_standalone::runtime::build().map_err(|e| e.to_string())?;
    match cli.command {
        Cmd::Serve {
            kind,
            ping_interval_ms,
            api_key,
        } => runtime.block_on(server::serve(
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
            runtime.block_on(floor::bench_idle(
                &counts,
                Duration::from_secs(hold_secs.min(600)),
                &sources,
                ping_interval_ms,
                runs.clamp(1, 10),
            ))
        }
        Cmd::Liveness {
            connections,
            hold_secs,
            sources,
            runs,
        } => {
            let sources = parse_sources(&sources).map_err(|e| e.to_string())?;
            runtime.block_on(liveness::bench_liveness(
                connections.clamp(1, 100_000),
                Duration::from_secs(hold_secs.clamp(1, 600)),
                &sources,
                runs.clamp(1, 10),
            ))
        }
        Cmd::Echo {
            connections,
            requests,
            runs,
        } => runtime.block_on(floor::bench_echo(connections, requests, runs.clamp(1, 10))),
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
            runtime.block_on(floor::bench_broadcast(&config, runs.clamp(1, 10)))
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
            runtime.block_on(http_publish::bench_http_publish(
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
            runtime.block_on(sse::bench_sse(
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
            runtime.block_on(codec::bench_codec(&echo, &broadcast, runs.clamp(1, 10)))
        }
        Cmd::Peers(args) => {
            let exe = std::env::current_exe().map_err(|e| e.to_string())?;
            runtime.block_on(belay_load::suites::peers::bench::run(args, &exe))
        }
        Cmd::Channels {
            sessions,
            per_session,
            rounds,
            sources,
            runs,
        } => {
            let sources = parse_sources(&sources).map_err(|e| e.to_string())?;
            runtime.block_on(channels::bench_channels(
                sessions.clamp(1, 1_000),
                per_session.clamp(1, 1_000),
                rounds.clamp(1, 20),
                &sources,
                runs.clamp(1, 10),
            ))
        }
    }
}
