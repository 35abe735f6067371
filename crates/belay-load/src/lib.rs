//! belay-load: the load generator behind `belay load` and `belay abuse`, and
//! the benchmark harness (`server-bench`, `cluster-bench`, `herd-bench`,
//! `host-bench`).
//!
//! Every load is bounded in count and in time and aims at loopback only
//! ([`clients::target::Target::parse`] refuses anything else).
//!
//! ```text
//!  server-bench ──spawns──▶ server process (servers::belay | servers::floor) ◀── measure::procfs
//!       │                          ▲
//!       └── loads::{idle, echo, broadcast, …} over clients::{websocket, wire, sse} ── 127.0.0.x sources
//! ```
//!
//! The modules, by kind:
//!
//! * [`clients`]: the minimal protocol clients the loads run, and the
//!   belay-client session of the suites whose clients come back after a loss.
//!   * [`target`](clients::target): where the load goes and where it comes from.
//!   * [`websocket`](clients::websocket): a Belay session over tokio-websockets (JSON).
//!   * [`wire`](clients::wire): the same session in either codec (JSON or binary).
//!   * [`sse`](clients::sse): a Belay session over the SSE fallback.
//!   * [`socketio`](clients::socketio): a socket.io v4 client, for the peers.
//!   * [`session`](clients::session): a belay-client `Client` (the core's
//!     `Session`) from a source address: the abuse victim, the cluster's
//!     recovery clients.
//!   * [`core_session`](clients::core_session): the core's `Session` on one
//!     task and one socket: the cluster's capacity hold.
//! * [`loads`]: bounded loads that return a report.
//!   * [`idle`](loads::idle): open N sessions, answer pings, hold them.
//!   * [`echo`](loads::echo): C sessions × R sequential `echo` requests.
//!   * [`broadcast`](loads::broadcast): S subscribers, M stamped messages; delivery latency.
//!   * [`http_publish`](loads::http_publish): the broadcast's publisher over `POST /api/publish`.
//!   * [`channels`](loads::channels): many distinct channels per session, subscribed then left.
//!   * [`sse_compare`](loads::sse_compare): the SSE fallback against WebSocket on one server.
//!   * [`socketio`](loads::socketio): the idle, echo and broadcast loads in socket.io.
//! * [`servers`]: the servers under test.
//!   * [`belay`](servers::belay): Belay's server as the benchmarks configure it.
//!   * [`floor`](servers::floor): the bare tokio-websockets server Belay is compared with.
//!   * [`child`](servers::child): a server under test as a child process.
//! * [`suites`]: whole runs that start their own servers and write a report.
//!   * [`peers`](suites::peers): Belay against the floor, `ws` and socket.io (`server-bench peers`).
//!   * [`cluster`](suites::cluster): the Redis cluster broker over several nodes (`cluster-bench`).
//!   * [`herd`](suites::herd): a fleet reconnecting after a real outage (`herd-bench`).
//!   * [`hosts`](suites::hosts): idle resident hosts asleep and awake (`host-bench`).
//!   * [`abuse`](suites::abuse): attackers next to a victim (`belay abuse`).
//! * [`measure`]: what the loads measure with.
//!   * [`stats`](measure::stats): latency samples and percentiles.
//!   * [`procfs`](measure::procfs): a process's RSS and CPU time from `/proc`.
//!
//! The binaries (`src/bin/`): `server-bench/` (the loads against Belay and
//! the floor, one module per benchmark), `cluster-bench.rs`, `herd-bench.rs`
//! and `host-bench.rs` (thin fronts of their suites).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod clients;
pub mod loads;
pub mod measure;
pub mod servers;
pub mod suites;

/// Why a load could not run or a session failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The target or the source addresses are unusable (not loopback, malformed).
    #[error("{0}")]
    Target(String),
    /// A socket operation failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The WebSocket layer failed.
    #[error("websocket: {0}")]
    WebSocket(#[from] tokio_websockets::Error),
    /// The server sent something unexpected or closed.
    #[error("protocol: {0}")]
    Protocol(String),
    /// A bound on time was reached.
    #[error("timed out: {0}")]
    Timeout(&'static str),
}
