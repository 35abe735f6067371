//! The demo's faults reach sessions over the SSE fallback as they reach
//! WebSocket ones (the stream layer holds or cuts their I/O): a freeze
//! holds the stream's events until it ends, flapping and a restart end the
//! stream without a `close` event, and a restart refuses new streams for
//! its window.

mod common;

use std::time::{Duration, Instant};

use belay_proto::message::{ClientMessage, ServerMessage, Subscribe};
use belay_proto::server::Limits;
use belay_server::ServerConfig;
use common::{demo_server, fault, start, SseEvent, SseRaw, SOON};
use serde_json::json;

/// Long enough that an event the server meant to send would have arrived.
const QUIET: Duration = Duration::from_millis(1_500);

/// Pings every 5 s: none falls inside a scenario (a frozen session the
/// server gives up on is another test's matter: faults.rs).
fn config() -> ServerConfig {
    let mut limits = Limits::default();
    limits.set_ping_interval(Duration::from_secs(5));
    ServerConfig::default().with_limits(limits)
}

async fn subscribed(sse: &mut SseRaw, channel: &str) {
    let subscribe = ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    });
    assert_eq!(sse.send(&[&subscribe]).await.status, 204);
    let reply = sse.recv_message().await;
    assert!(matches!(reply, ServerMessage::Subscribed(_)), "{reply:?}");
}

#[tokio::test]
async fn a_freeze_holds_the_streams_events_until_it_ends_then_they_come_in_order() {
    let (demo, server) = demo_server(config());
    let addr = start(&demo, &server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    subscribed(&mut sse, "news").await;

    fault(addr, "freeze", r#"{"on":true}"#).await;
    for n in 1..=2 {
        server
            .publish("news", json!({ "n": n }))
            .await
            .expect("published");
    }
    assert_eq!(
        sse.next_within(QUIET).await,
        None,
        "an event came through the freeze"
    );

    fault(addr, "freeze", r#"{"on":false}"#).await;
    for n in 1..=2 {
        match sse.recv_message().await {
            ServerMessage::Publication(p) => {
                assert_eq!(p.data.get(), json!({ "n": n }).to_string())
            }
            other => panic!("expected publication {n}, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn flapping_ends_the_stream_without_close_after_the_delay() {
    let (demo, server) = demo_server(config());
    let addr = start(&demo, &server).await;
    fault(addr, "flapping", r#"{"on":true,"after_ms":300}"#).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let welcomed = Instant::now();
    assert_eq!(sse.closed_within(SOON).await, None);
    let lived = welcomed.elapsed();
    assert!(lived >= Duration::from_millis(280), "cut early: {lived:?}");
}

#[tokio::test]
async fn a_restart_ends_every_stream_without_close_and_refuses_new_ones_for_its_window() {
    let (demo, server) = demo_server(config());
    let addr = start(&demo, &server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let started = Instant::now();
    fault(addr, "restart", r#"{"down_ms":2000}"#).await;
    assert_eq!(sse.closed_within(SOON).await, None);

    let connect = r#"{"type":"connect","protocol":1}"#;
    let refused = SseRaw::open(addr, connect, &[])
        .await
        .err()
        .expect("refused");
    if started.elapsed() < Duration::from_millis(2000) {
        assert_eq!(refused.status, 503, "{refused:?}");
        assert_eq!(refused.header("retry-after"), Some("1"), "{refused:?}");
    }
    // After the window a stream opens and is served.
    let deadline = Instant::now() + SOON;
    let mut fresh = loop {
        match SseRaw::open(addr, connect, &[]).await {
            Ok(sse) => break sse,
            Err(refused) => assert_eq!(refused.status, 503, "{refused:?}"),
        }
        assert!(Instant::now() < deadline, "still refused");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(started.elapsed() >= Duration::from_millis(2000));
    assert!(matches!(
        fresh.recv().await,
        SseEvent::Message(ServerMessage::Welcome(_))
    ));
}
