//! A whole session over the fallback: connect in the opening POST, requests
//! and subscriptions as sends, replies and publications as events, and the
//! client's close.

use std::time::Duration;

use belay_proto::message::{ClientMessage, ServerMessage, Subscribe};
use serde_json::json;

use crate::common::{self, SseEvent, SseRaw};
use crate::{request, result_of, server};
use belay_server::ServerConfig;

#[tokio::test]
async fn the_stream_is_an_event_stream_that_proxies_pass_on_at_once() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (sse, welcome) = SseRaw::connected(addr, None).await;
    assert!(matches!(welcome, ServerMessage::Welcome(_)));
    assert_eq!(sse.head.header("content-type"), Some("text/event-stream"));
    assert_eq!(
        sse.head.header("cache-control"),
        Some("no-cache, no-transform")
    );
    assert_eq!(sse.head.header("x-accel-buffering"), Some("no"));
    assert_eq!(sse.stream.len(), 22, "128 random bits in base64url");
}

#[tokio::test]
async fn a_request_sent_is_answered_on_the_stream() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let sent = sse.send(&[&request(1, "echo", json!({"n": 1}))]).await;
    assert_eq!(sent.status, 204, "{sent:?}");
    assert_eq!(result_of(&mut sse, 1).await, json!({"n": 1}));
}

#[tokio::test]
async fn several_messages_in_one_send_are_read_in_order() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let (a, b, c) = (
        request(1, "echo", json!("a")),
        request(2, "echo", json!("b")),
        request(3, "echo", json!("c")),
    );
    assert_eq!(sse.send(&[&a, &b, &c]).await.status, 204);
    let mut ids = Vec::new();
    while ids.len() < 3 {
        if let ServerMessage::Response(r) = sse.recv_message().await {
            ids.push(r.id);
        }
    }
    assert_eq!(ids, [1, 2, 3]);
}

#[tokio::test]
async fn a_publication_reaches_a_subscriber_over_the_stream() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let subscribe = ClientMessage::Subscribe(Subscribe {
        channel: "news".into(),
        since: None,
        token: None,
    });
    assert_eq!(sse.send(&[&subscribe]).await.status, 204);
    assert!(matches!(
        sse.recv_message().await,
        ServerMessage::Subscribed(_)
    ));
    server
        .publish("news", json!({"hello": "world"}))
        .await
        .expect("published");
    match sse.recv_message().await {
        ServerMessage::Publication(p) => {
            assert_eq!(p.channel, "news");
            assert_eq!(p.data.get(), r#"{"hello":"world"}"#);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_close_ends_the_stream_and_its_sends_find_nothing() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    assert_eq!(sse.close(1000, "client stop").await.status, 204);
    // The server answered the client's close: the stream ends, no event.
    assert_eq!(sse.closed_within(Duration::from_secs(5)).await, None);
    let after = sse.send(&[&ClientMessage::Ping]).await;
    assert_eq!(after.status, 404, "{after:?}");
    assert_eq!(server.metrics().open_connections(), 0);
}

#[tokio::test]
async fn a_drain_closes_the_stream_with_its_code_and_reason() {
    let mut config = ServerConfig::default();
    config
        .drain
        .set_lb_delay(Duration::from_millis(10))
        .set_linger(Duration::from_millis(10))
        .set_reconnect_spread(Duration::from_millis(10));
    let server = server(config);
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    server.drain();
    let closed = sse.closed_within(Duration::from_secs(60)).await;
    assert_eq!(closed, Some((1012, "server restarting".into())));
    assert!(matches!(sse.recv().await, SseEvent::End));
}
