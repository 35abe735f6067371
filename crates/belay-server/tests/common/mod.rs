//! A server on a loopback port, and the shared raw client and HTTP helpers
//! (belay-test-support's `sockets`).
#![allow(dead_code, unreachable_pub, unused_imports)]

use std::net::SocketAddr;

use belay_server::Server;
use tokio::net::TcpListener;

pub use belay_test_support::sockets::*;

/// A server with the demo's methods (echo, order.create, slow) and `config`.
pub fn server(config: belay_server::ServerConfig) -> Server {
    Server::builder()
        .config(config)
        .methods(belay_demo::methods())
        .build()
}

pub async fn start(server: &Server) -> SocketAddr {
    start_with(server, server.router()).await
}

pub async fn start_with(server: &Server, router: axum::Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let server = server.clone();
    tokio::spawn(async move {
        let _ = server.serve(listener, router).await;
    });
    addr
}
