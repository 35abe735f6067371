//! belay-load: the load generator behind `belay load` and the server
//! benchmark harness (`server-bench`).
//!
//! Every load is bounded in count and in time and aims at loopback only
//! ([`target::Target::parse`] refuses anything else). Clients are minimal:
//! one task and one tokio-websockets stream each, frames recognised by their
//! `"type"` field without a full decode, so one process can hold tens of
//! thousands of sessions next to the server it measures.
//!
//! ```text
//!  server-bench ──spawns──▶ server process (Belay | floor) ◀── /proc/PID/{status,stat}
//!       │                          ▲
//!       └── idle / echo / broadcast loads (this crate) ── 127.0.0.x sources
//! ```
//!
//! * [`idle`]: open N sessions, answer pings, hold them.
//! * [`echo`]: C sessions × R sequential `echo` requests; throughput and latency.
//! * [`broadcast`]: S subscribers of one channel, a publisher asking the
//!   server to publish M stamped messages; deliveries/s and delivery latency.
//! * [`http_publish`]: the broadcast load's other publisher, `POST /api/publish`
//!   over keep-alive HTTP connections.
//! * [`channels`]: S sessions × N distinct channels each, subscribed then
//!   left, in rounds; what a channel costs and whether memory comes back.
//! * [`floor`]: the bare tokio-websockets server Belay is compared with.
//! * [`bench_server`]: the Belay server as the benchmarks configure it.
//! * [`peers`]: the same loads against socket.io and a Node `ws` server (`server-bench peers`).
//! * [`herd`]: `herd-bench`, real clients reconnecting after a real server
//!   outage, per reconnect policy (docs/HERD.md).
//! * [`abuse`]: the abuse harness behind `belay abuse` (docs/ABUSE.md).
//! * [`server_runtime`]: the runtime a server process runs on.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod abuse;
pub mod bench_server;
pub mod broadcast;
pub mod channels;
pub mod client;
pub mod cluster;
pub mod echo;
pub mod floor;
pub mod herd;
pub mod hosts;
pub mod http_publish;
pub mod idle;
pub mod peers;
pub mod procfs;
pub mod server_runtime;
pub mod sse;
pub mod sse_compare;
pub mod stats;
pub mod target;
pub mod wire;

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
