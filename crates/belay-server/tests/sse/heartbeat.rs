//! Liveness over the fallback is the protocol's own: the server pings on
//! the stream, the client answers with a send, and a client that vanished
//! is reaped within the same bound as over a WebSocket.

use std::time::Duration;

use belay_proto::message::ServerMessage;
use belay_proto::server::Limits;

use crate::common::{self, SseEvent, SseRaw};
use crate::server;
use belay_server::ServerConfig;

fn quick_pings() -> ServerConfig {
    let mut limits = Limits::default();
    limits
        .set_ping_interval(Duration::from_millis(200))
        .set_pong_timeout(Duration::from_millis(200));
    let mut config = ServerConfig::default();
    config.limits = limits;
    config
}

#[tokio::test]
async fn a_client_that_answers_pings_stays_connected() {
    let server = server(quick_pings());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    for _ in 0..4 {
        // recv_message answers each ping with a pong send.
        let silent = sse.next_within(Duration::from_millis(250)).await;
        match silent {
            Some(SseEvent::Message(ServerMessage::Ping)) => {
                let pong = sse
                    .send(&[&belay_proto::message::ClientMessage::Pong])
                    .await;
                assert_eq!(pong.status, 204);
            }
            None => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(server.metrics().open_connections(), 1);
}

#[tokio::test]
async fn a_client_that_stopped_answering_is_reaped_4000_within_the_bound() {
    let server = server(quick_pings());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let started = std::time::Instant::now();
    let closed = sse.closed_within(Duration::from_secs(5)).await;
    assert_eq!(closed, Some((4000, "heartbeat timeout".into())));
    // interval + timeout = 400 ms; generous slack for scheduling.
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.metrics().zombies_reaped(), 1);
}

#[tokio::test]
async fn a_client_whose_stream_dropped_is_gone_at_once() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (sse, _) = SseRaw::connected(addr, None).await;
    assert_eq!(server.metrics().open_connections(), 1);
    drop(sse);
    let gone = common::metric_until(addr, "belay_connections_open", |n| n == 0.0).await;
    assert_eq!(gone, 0.0);
}
