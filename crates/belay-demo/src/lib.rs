//! belay-demo: the demo application behind `belay serve --demo`, outside the
//! library it shows off.
//!
//! It is a belay-server user like any other: a `feed` channel with a tick
//! every 500 ms ([`spawn_feed`]), a few RPC methods ([`methods`]), the demo
//! page at `/`, and a fault panel whose faults (spec/MISSION §10) are
//! applied only through belay-server's extension points (see [`faults`]):
//!
//! ```text
//!   /admin/fault/{name} ──▶ FaultBench ──┬─ FaultStreams  (ServerBuilder::stream_layer): freeze, flapping, restart
//!                                        ├─ method layer  (Methods::layer): slow replies, service down
//!                                        ├─ ServiceBroker (ServerBuilder::broker): service down
//!                                        └─ router layer  (/ws refused while restarting)
//! ```
//!
//! [`cost`] puts a CPU cost on every session-opening request the same way
//! (a router layer), for benchmarks (`belay serve --handshake-cost-us`).
//!
//! ```no_run
//! use std::time::Duration;
//! use belay_demo::Demo;
//! use belay_server::ServerConfig;
//!
//! # async fn run() -> std::io::Result<()> {
//! let demo = Demo::new();
//! let server = demo.builder(ServerConfig::default()).build();
//! belay_demo::spawn_feed(&server, Duration::from_millis(500));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! server.serve(listener, demo.router(&server)).await
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod admin;
pub mod cost;
pub mod faults;
mod methods;
mod page;

use std::sync::Arc;

use axum::Router;
use belay_server::broker::{Broker, MemoryBroker};
use belay_server::{Server, ServerBuilder, ServerConfig};

pub use admin::{FLAP_AFTER, RESTART_DOWN, SLOW_REPLY};
pub use faults::{FaultBench, Faults};
pub use methods::{methods, spawn_feed};

/// The demo: its fault bench, and how to put it on a server.
#[derive(Debug, Clone, Default)]
pub struct Demo {
    bench: FaultBench,
}

impl Demo {
    /// A demo with no fault in force.
    pub fn new() -> Demo {
        Demo::default()
    }

    /// Its fault bench (to switch faults from code, as the admin API does).
    pub fn faults(&self) -> &FaultBench {
        &self.bench
    }

    /// A server builder with `config`, the demo's [`methods`] behind the
    /// bench's method layer, the bench's stream layer, and the embedded
    /// broker (with `config.history`) behind the bench's service switch.
    /// Add an authenticator or more before building.
    pub fn builder(&self, config: ServerConfig) -> ServerBuilder {
        let broker = Arc::new(MemoryBroker::new(config.history));
        self.builder_on(config, broker)
    }

    /// [`builder`](Self::builder) on another broker (Redis, for a cluster
    /// of demo nodes), still behind the bench's service switch.
    pub fn builder_on(&self, config: ServerConfig, broker: Arc<dyn Broker>) -> ServerBuilder {
        let mut methods = methods();
        self.bench.layer_methods(&mut methods);
        Server::builder()
            .broker(Arc::new(self.bench.wrap_broker(broker)))
            .config(config)
            .methods(methods)
            .stream_layer(self.bench.streams())
    }

    /// The server's routes, `POST /admin/drain`, the page at `/`, and the
    /// fault panel's admin API (see the `admin` routes in the crate's
    /// README section of docs/SERVER.md).
    pub fn router(&self, server: &Server) -> Router {
        admin::router(server, &self.bench)
    }
}
