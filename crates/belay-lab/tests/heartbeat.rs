//! A Belay session through the proxy: alive in pass mode, reaped by the
//! server's heartbeat when the path is blackholed (MISSION §10, the
//! "freeze" fault on a real socket path instead of a paused server socket).

mod common;

use std::time::Duration;

use belay_demo as demo;
use belay_lab::Fault;
use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage};
use belay_proto::server::Limits;
use belay_server::{Server, ServerConfig};
use common::ws::{Next, Session};
use common::*;
use serde_json::json;
use tokio::net::TcpListener;

/// The server's heartbeat close code (`CloseCode::HEARTBEAT_TIMEOUT`).
const HEARTBEAT_TIMEOUT: u16 = 4000;

/// A demo server with a 1 s ping interval and 1 s pong timeout, on a free port.
async fn fast_server() -> (Server, std::net::SocketAddr) {
    let mut limits = Limits::default();
    limits
        .set_ping_interval(Duration::from_secs(1))
        .set_pong_timeout(Duration::from_secs(1));
    let server = Server::builder()
        .config(ServerConfig::default().with_limits(limits))
        .methods(demo::methods())
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = server.clone();
    tokio::spawn(async move {
        let _ = serving.serve(listener, serving.router()).await;
    });
    (server, addr)
}

/// Send an echo request and expect its answer, answering pings on the way.
async fn echo(session: &mut Session, id: u64) {
    session
        .send(&ClientMessage::Request(Request {
            id,
            method: "echo".into(),
            params: json!(id),
            idem: None,
            timeout_ms: None,
        }))
        .await;
    loop {
        match session.next_within(SOON).await {
            Next::Message(ServerMessage::Ping) => session.send(&ClientMessage::Pong).await,
            Next::Message(ServerMessage::Response(r)) => {
                assert_eq!((r.id, r.reply), (id, Reply::Result(json!(id).into())));
                return;
            }
            other => panic!("expected the echo, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_survives_pass_mode_across_heartbeats() {
    let (server, addr) = fast_server().await;
    let proxy = proxy_to(addr).await;
    let mut session = Session::connect(proxy.local_addr()).await;
    // Answer three pings (three ping intervals) through the proxy.
    let mut pings = 0;
    while pings < 3 {
        match session.next_within(SOON).await {
            Next::Message(ServerMessage::Ping) => {
                session.send(&ClientMessage::Pong).await;
                pings += 1;
            }
            Next::Message(_) => {}
            other => panic!("the session ended: {other:?}"),
        }
    }
    echo(&mut session, 1).await;
    assert_eq!(server.metrics().zombies_reaped(), 0);
    assert_eq!(server.metrics().open_connections(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blackholed_session_is_reaped_by_the_server_heartbeat() {
    let (server, addr) = fast_server().await;
    let proxy = proxy_to(addr).await;
    let mut session = Session::connect(proxy.local_addr()).await;
    echo(&mut session, 1).await;

    proxy.set(Fault::Blackhole).unwrap();
    // Ping interval + pong timeout = 2 s; allow generously more.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(8);
    while server.metrics().zombies_reaped() == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server never reaped the frozen session"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(server.metrics().zombies_reaped(), 1);
    // The client saw nothing: its socket is open, the path frozen.
    assert!(matches!(
        session.next_within(Duration::from_millis(300)).await,
        Next::Silent
    ));

    // Held, not dropped: once the path thaws the client gets what the server
    // sent meanwhile, ending with the heartbeat close.
    proxy.set(Fault::Pass).unwrap();
    loop {
        match session.next_within(SOON).await {
            Next::Message(ServerMessage::Ping) => {}
            Next::Closed(code) => {
                assert_eq!(code, Some(HEARTBEAT_TIMEOUT));
                break;
            }
            other => panic!("expected held pings then the close, got {other:?}"),
        }
    }
}
