//! A demo server on a loopback port, its fault panel, and waiting helpers.
#![allow(dead_code, unreachable_pub)]

pub mod scripted;

use std::net::SocketAddr;
use std::time::Duration;

use belay_client::{Client, ClientBuilder, ClientEvent, Status};
use belay_demo::Demo;
use belay_proto::backoff::BackoffPolicy;
use belay_proto::server::Limits;
use belay_server::events::ServerEvent;
use belay_server::{Server, ServerConfig};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch};

/// A generous bound for anything that should happen "soon".
pub const SOON: Duration = Duration::from_secs(10);

/// A demo server (belay-demo: its methods and fault bench) and its demo;
/// derefs to the server.
#[derive(Clone)]
pub struct DemoServer {
    pub demo: Demo,
    server: Server,
}

impl std::ops::Deref for DemoServer {
    type Target = Server;

    fn deref(&self) -> &Server {
        &self.server
    }
}

/// A demo server with a 1 s ping (and 1 s pong timeout).
pub fn demo_server() -> DemoServer {
    demo_server_with_history(belay_server::broker::HistoryLimits::default())
}

/// A demo server like [`demo_server`] with other channel history bounds.
pub fn demo_server_with_history(history: belay_server::broker::HistoryLimits) -> DemoServer {
    let mut limits = Limits::default();
    limits
        .set_ping_interval(Duration::from_secs(1))
        .set_pong_timeout(Duration::from_secs(1));
    let demo = Demo::new();
    let config = ServerConfig::default()
        .with_limits(limits)
        .with_history(history);
    let server = demo.builder(config).build();
    DemoServer { demo, server }
}

/// A demo server with a 10 s ping and pong timeout: a client whose sends
/// stall for seconds is not closed for it.
#[allow(dead_code)] // Not every test binary uses it.
pub fn demo_server_with_slow_ping() -> DemoServer {
    let mut limits = Limits::default();
    limits
        .set_ping_interval(Duration::from_secs(10))
        .set_pong_timeout(Duration::from_secs(10));
    let demo = Demo::new();
    let server = demo
        .builder(ServerConfig::default().with_limits(limits))
        .build();
    DemoServer { demo, server }
}

/// Serve the demo router on 127.0.0.1 with a port of the OS's choosing.
pub async fn start(server: &DemoServer) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = server.server.clone();
    let router = server.demo.router(&serving);
    tokio::spawn(async move {
        let _ = serving.serve(listener, router).await;
    });
    addr
}

/// A client with a fast heartbeat and short backoff, for tests.
pub fn builder(addr: SocketAddr) -> ClientBuilder {
    Client::builder(format!("ws://{addr}/ws")).configure(|c| {
        c.set_probe_interval(Duration::from_secs(1))
            .set_probe_timeout(Duration::from_secs(1))
            .set_connect_timeout(Duration::from_secs(2))
            .set_backoff(BackoffPolicy::equal_jitter(
                Duration::from_millis(200),
                Duration::from_secs(1),
            ));
    })
}

/// `POST /admin/fault/{name}` with a JSON body (belay-demo's fault panel).
pub async fn fault(addr: SocketAddr, name: &str, body: &str) {
    belay_test_support::sockets::fault(addr, name, body).await;
}

/// Wait until the status satisfies `pred`; returns it.
pub async fn status_where(
    status: &mut watch::Receiver<Status>,
    what: &str,
    pred: impl FnMut(&Status) -> bool,
) -> Status {
    tokio::time::timeout(SOON, status.wait_for(pred))
        .await
        .unwrap_or_else(|_| panic!("status: {what} within the bound"))
        .expect("the client lives")
        .clone()
}

/// The next client event matching `pred`.
pub async fn event_where(
    events: &mut broadcast::Receiver<ClientEvent>,
    what: &str,
    mut pred: impl FnMut(&ClientEvent) -> bool,
) -> ClientEvent {
    tokio::time::timeout(SOON, async {
        loop {
            let event = events.recv().await.expect("the event feed lives");
            if pred(&event) {
                return event;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("event: {what} within the bound"))
}

/// Wait until the server holds `n` connections (checked on every server event).
pub async fn open_connections(server: &Server, n: i64) {
    let mut events: broadcast::Receiver<ServerEvent> = server.events();
    tokio::time::timeout(Duration::from_secs(20), async {
        while server.metrics().open_connections() != n {
            // Any event may change the count; lagging is fine, we re-check.
            let _ = events.recv().await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "{n} open connections within the bound (have {})",
            server.metrics().open_connections()
        )
    });
}
