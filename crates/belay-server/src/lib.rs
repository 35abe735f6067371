//! belay-server: the Belay server as a library.
//!
//! A [`Server`] holds sessions that speak spec/PROTOCOL.md over WebSocket:
//! it authenticates each connection and authorizes every message, answers
//! every request exactly once (honouring idempotency keys), confirms
//! subscriptions and replays missed publications from channel history (or
//! says it cannot), pings quiet connections and reaps dead ones, bounds every
//! queue, refuses excess connections cheaply with a retry hint, paces
//! reconnects with slots in `welcome`, and drains gracefully.
//!
//! ```text
//!  HTTP (axum) ── /ws upgrade ── admission, origin, per-IP ──▶ connection task (one per session)
//!        │                                                     │ read loop (state, heartbeat, limits)
//!        ├─ /metrics /healthz /readyz /admin/drain             │ + writes from a bounded queue (ws codec)
//!        │                                                     │ request tasks ─▶ Methods (RPC)
//!  Server::publish ──▶ Broker (history + fan-out) ─────────────┘ forwarders (live publications)
//! ```
//!
//! The decisions are belay-proto's; this crate does the I/O. Per connection
//! they are its [`Connection`](belay_proto::server::Connection) (handshake,
//! heartbeat, limits, requests, subscriptions); server-wide they are the
//! [`Node`](belay_proto::server::Node) (the registry of connections and
//! users, the drain, access routes, presence, the reserved methods, keyed
//! requests, refresh rules, resident hosts). The run loop, as the client
//! driver's:
//!
//! ```text
//! accept          ─▶ node.handle_connected(now) → handle; a Connection per socket
//! frame, verdict  ─▶ connection.handle_input(now, Input::…); carry out connection.poll_output()
//! welcome / close ─▶ node.handle_event(now, handle, NodeEvent::Identified { user } / Closed)
//! node outputs    ─▶ Order { connection, order } → that connection's mailbox → its core
//!                    Lifecycle(state) → readiness and drained() waiters
//! timers          ─▶ sleep until poll_timeout(), then handle_timeout(now) (each machine its own)
//! ```
//!
//! Only `clock.rs` reads time, and no module imports another in a loop
//! (docs/SERVER.md says how the test command checks both).
//!
//! ```no_run
//! use belay_server::{rpc::{Methods, RpcError}, Server};
//!
//! # async fn run() -> std::io::Result<()> {
//! let mut methods = Methods::new();
//! methods.register("echo", |_ctx, v: serde_json::Value| async move { Ok::<_, RpcError>(v) });
//! let server = Server::builder().methods(methods).build();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! server.publish("news", serde_json::json!({"hello": "world"})).await.expect("published");
//! server.serve(listener, server.router()).await
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod access;
pub mod admin;
mod admin_state;
pub mod auth;
pub mod broker;
mod client_publish;
mod clock;
mod cluster_pacing;
pub mod config;
pub mod conformance;
mod connection;
pub mod events;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod host_directory;
mod host_waiters;
mod hosts;
mod idempotency_expiry;
mod inspect;
mod logs;
mod mailbox;
mod method_table;
pub mod metrics;
mod node;
mod outbound;
mod peer_limits;
mod request_body;
mod requests;
pub mod rpc;
mod server;
mod shared;
pub mod sse;
mod sse_relay;
mod sse_streams;
pub mod stream;
pub mod tls;
mod unhandled;
mod upgrade;
mod ws;

pub use belay_proto::server::{Access, ChannelOptions, ClusterCapacity, Namespaces};
pub use config::ServerConfig;
pub use host_directory::{DirectoryFuture, HostDirectory, SharedHost};
pub use inspect::{NodeStats, UserSession, MAX_LISTED_SESSIONS};
pub use request_body::read_body;
pub use server::ServerBuilder;
pub use shared::{Lifecycle, Server};
