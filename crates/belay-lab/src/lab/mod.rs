//! The measurement harness behind `belay lab`: every fault × every client
//! × R repetitions, written up as docs/RESULTS.md.
//!
//! Each repetition starts a fresh `belay serve --demo` process (in its own
//! network namespace for the link cut), a fault [`Proxy`](crate::Proxy) in
//! front of it, and one client wrapped as an [`Agent`]; for the cluster
//! faults ([`LabFault::cluster`]) a fresh cluster instead: a `redis-server`,
//! two `belay serve --demo --broker redis://…` nodes and HAProxy in front.
//! The agent runs a fixed workload and reports [`Observation`]s; the lab
//! switches the fault on and off through the server's admin API, the proxy,
//! the link or signals to the cluster's processes, and turns the
//! observations into [`RepFigures`].
//!
//! ```text
//!   lab ──admin API──▶ belay serve --demo ◀── proxy ◀── agent (naive | belay | browser)
//!    ▲                                                     │
//!    └──────────────── observations (dial, ready, lost, pub, sent, settled…) ◀┘
//! ```
//!
//! The clients: [`ClientKind::Naive`] (the baseline that trusts socket
//! events, [`naive`]), [`ClientKind::Belay`] (`belay-client`), and the
//! browser client and a naive browser page in headless Chromium via
//! `clients/js/lab/agent.mjs`, which prints the same observations as JSON
//! lines (docs/LAB.md).

mod agent;
mod belay_agent;
mod client_kind;
mod cluster;
mod fault;
mod haproxy;
mod hosted;
mod http;
mod matrix;
mod measure;
pub mod naive;
mod netns;
mod observation;
mod peer_agent;
mod probe;
mod redis;
mod report;
mod run;
mod sentinels;
mod server;
mod socketio_app;
mod transport;

pub use agent::{Agent, AgentError, BrowserSetup, ClientKind, Workload};
pub use fault::LabFault;
pub use matrix::{run, Cell, LabConfig, LabReport, Progress};
pub use measure::RepFigures;
pub use observation::{Observation, Outcome, Stamped};
pub use report::markdown;
pub use server::ServerSetup;
pub use socketio_app::ServerApp;
pub use transport::LabTransport;
