//! The demo server on a loopback port, and the shared raw client and HTTP
//! helpers (belay-test-support's `sockets`).
#![allow(dead_code, unreachable_pub, unused_imports)]

use std::net::SocketAddr;

use belay_demo::Demo;
use belay_server::{Server, ServerConfig};
use tokio::net::TcpListener;

pub use belay_test_support::sockets::*;

/// A demo server with `config` (not yet listening) and its demo.
pub fn demo_server(config: ServerConfig) -> (Demo, Server) {
    let demo = Demo::new();
    let server = demo.builder(config).build();
    (demo, server)
}

/// Serve the demo's router on a loopback port.
pub async fn start(demo: &Demo, server: &Server) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let router = demo.router(server);
    let server = server.clone();
    tokio::spawn(async move {
        let _ = server.serve(listener, router).await;
    });
    addr
}
