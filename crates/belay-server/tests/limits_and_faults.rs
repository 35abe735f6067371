//! Every documented response to a misbehaving peer, zombie reaping, slow
//! consumers, admission control and the graceful drain — while other
//! clients keep working.

mod common;

use std::time::Duration;

use belay_demo as demo;
use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage, Subscribe};
use belay_proto::server::DrainConfig;
use belay_proto::server::Limits;
use belay_server::{Lifecycle, Server, ServerConfig};
use common::{Closed, Raw, SOON};
use futures_util::SinkExt;
use serde_json::json;
use tokio_websockets::Message;

fn server_with(limits: Limits) -> Server {
    Server::builder()
        .config(ServerConfig::default().with_limits(limits))
        .methods(demo::methods())
        .build()
}

async fn echo_works(raw: &mut Raw, id: u64) {
    raw.send(&ClientMessage::Request(Request {
        id,
        method: "echo".into(),
        params: json!(id),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    loop {
        match raw.recv_skipping_pings().await {
            Some(ServerMessage::Response(r)) if r.id == id => {
                assert_eq!(r.reply, Reply::Result(json!(id).into()));
                return;
            }
            Some(_) => continue,
            None => panic!("the bystander was disconnected"),
        }
    }
}

async fn expect_error(raw: &mut Raw, code: &str) {
    match raw.recv_skipping_pings().await {
        Some(ServerMessage::Error(e)) => assert_eq!(e.code, code, "{e:?}"),
        other => panic!("expected an error reply, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_messages_get_an_error_reply_and_the_connection_lives() {
    let server = server_with(Limits::default());
    let addr = common::start(&server).await;
    let (mut bad, _) = Raw::connected(addr, None).await;
    let (mut bystander, _) = Raw::connected(addr, None).await;
    bad.send_text("{not json").await;
    expect_error(&mut bad, "bad_request").await;
    bad.send_text(r#"{"type":"hologram"}"#).await;
    expect_error(&mut bad, "bad_request").await;
    bad.send_text(r#"{"type":"request","id":"x"}"#).await;
    expect_error(&mut bad, "bad_request").await;
    bad.ws.send(Message::binary(vec![1u8, 2, 3])).await.unwrap();
    expect_error(&mut bad, "bad_request").await;
    echo_works(&mut bad, 1).await;
    echo_works(&mut bystander, 2).await;
}

#[tokio::test]
async fn an_oversized_frame_is_closed_with_1009() {
    let mut limits = Limits::default();
    limits.set_max_frame_len(1_024);
    let server = server_with(limits);
    let addr = common::start(&server).await;
    let (mut big, _) = Raw::connected(addr, None).await;
    let (mut bystander, _) = Raw::connected(addr, None).await;
    big.send_text(&format!(
        r#"{{"type":"ping","pad":"{}"}}"#,
        "x".repeat(4_096)
    ))
    .await;
    assert!(matches!(
        big.closed_within(SOON).await,
        Closed::Frame(1009, _)
    ));
    echo_works(&mut bystander, 1).await;
}

#[tokio::test]
async fn invalid_utf8_is_closed_with_1007() {
    let server = server_with(Limits::default());
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let invalid = bytes::Bytes::from_static(&[0x7b, 0xff, 0xfe, 0x7d]);
    raw.ws.send(Message::text(invalid)).await.unwrap();
    assert!(matches!(
        raw.closed_within(SOON).await,
        Closed::Frame(1007, _)
    ));
}

#[tokio::test]
async fn a_flood_is_rate_limited_then_closed_while_others_keep_working() {
    let mut limits = Limits::default();
    limits.set_messages_per_sec(10.0).set_burst(5);
    let server = server_with(limits);
    let addr = common::start(&server).await;
    let (mut flood, _) = Raw::connected(addr, None).await;
    let (mut bystander, _) = Raw::connected(addr, None).await;
    for id in 0..100 {
        flood
            .send(&ClientMessage::Request(Request {
                id,
                method: "echo".into(),
                params: json!(id),
                idem: None,
                timeout_ms: None,
            }))
            .await;
    }
    let mut rate_limited = 0;
    let closed = loop {
        match flood.ws.next_frame().await {
            FrameOrClose::Text(text) => {
                if text.contains("rate_limited") {
                    rate_limited += 1;
                }
            }
            FrameOrClose::Close(code) => break code,
        }
    };
    assert!(rate_limited >= 1, "the flood was told to slow down first");
    assert_eq!(closed, Some(4029));
    echo_works(&mut bystander, 1).await;
}

/// A minimal reader for the flood test, which must not panic on close.
enum FrameOrClose {
    Text(String),
    Close(Option<u16>),
}

trait NextFrame {
    async fn next_frame(&mut self) -> FrameOrClose;
}

impl<S> NextFrame for tokio_websockets::WebSocketStream<S>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    async fn next_frame(&mut self) -> FrameOrClose {
        use futures_util::StreamExt;
        match tokio::time::timeout(SOON, self.next()).await {
            Ok(Some(Ok(message))) => {
                if let Some((code, _)) = message.as_close() {
                    FrameOrClose::Close(Some(u16::from(code)))
                } else {
                    FrameOrClose::Text(message.as_text().unwrap_or_default().to_owned())
                }
            }
            _ => FrameOrClose::Close(None),
        }
    }
}

#[tokio::test]
async fn a_client_that_never_connects_is_closed_at_the_handshake_timeout() {
    let mut limits = Limits::default();
    limits.set_handshake_timeout(Duration::from_millis(200));
    let server = server_with(limits);
    let addr = common::start(&server).await;
    let mut raw = Raw::open(addr).await;
    assert_eq!(
        raw.closed_within(SOON).await,
        Closed::Frame(4008, "handshake timeout".into())
    );
}

#[tokio::test]
async fn a_silent_client_is_pinged_then_reaped_within_the_bound() {
    let mut limits = Limits::default();
    limits
        .set_ping_interval(Duration::from_millis(200))
        .set_pong_timeout(Duration::from_millis(200));
    let server = server_with(limits);
    let addr = common::start(&server).await;
    let (mut zombie, _) = Raw::connected(addr, None).await;
    let started = std::time::Instant::now();
    // The zombie reads but never answers.
    assert_eq!(zombie.recv().await, Some(ServerMessage::Ping));
    let closed = zombie.closed_within(SOON).await;
    assert_eq!(closed, Closed::Frame(4000, "heartbeat timeout".into()));
    // Bound: interval + timeout = 400 ms; allow generous scheduling slack.
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.metrics().zombies_reaped(), 1);
}

#[tokio::test]
async fn a_reader_that_stops_reading_is_closed_as_a_slow_consumer() {
    let mut limits = Limits::default();
    limits.set_outbound_queue(16);
    let server = server_with(limits);
    let addr = common::start(&server).await;
    let (mut slow, _) = Raw::connected(addr, None).await;
    slow.send(&ClientMessage::Subscribe(Subscribe {
        channel: "firehose".into(),
        since: None,
        token: None,
    }))
    .await;
    assert!(matches!(
        slow.recv_skipping_pings().await,
        Some(ServerMessage::Subscribed(_))
    ));
    let mut events = server.events();
    // The client stops reading; the server keeps publishing big messages.
    let payload = "x".repeat(16 * 1024);
    let code = loop {
        server
            .publish("firehose", json!(payload))
            .await
            .expect("published");
        tokio::task::yield_now().await;
        if let Ok(event) = events.try_recv() {
            if event.kind == "disconnect" {
                break event.detail;
            }
        }
        if server.metrics().closes_by_code().contains_key(&4009) {
            break "4009".into();
        }
    };
    assert!(code.contains("4009"), "{code}");
    assert!(server.metrics().open_connections() <= 1);
}

#[tokio::test]
async fn over_the_accept_rate_native_clients_get_503_and_browsers_a_readable_hint() {
    let server = Server::builder()
        .config(ServerConfig::default().with_accept_rate(1.0))
        .build();
    let addr = common::start(&server).await;
    let (_first, _) = Raw::connected(addr, None).await;

    // A native client (no Origin): HTTP 503 with Retry-After, before any upgrade.
    let response = common::upgrade_head(addr).await;
    assert_eq!(response.status, 503, "{response:?}");
    assert!(response.header("retry-after").is_some(), "{response:?}");

    // A browser (Origin present): upgraded, then advice and 1013 with the hint.
    let mut browser = Raw::open_with(addr, &[("origin", "http://app.example")]).await;
    let Some(ServerMessage::Reconnect(advice)) = browser.recv().await else {
        panic!("advice first")
    };
    assert_eq!(advice.reason, "overload");
    assert!(advice.min_delay_ms > 0);
    let Closed::Frame(code, reason) = browser.closed_within(SOON).await else {
        panic!("a close frame")
    };
    assert_eq!(code, 1013);
    assert!(reason.contains("retry after"), "{reason}");
    assert_eq!(server.metrics().admission_refusals(), 2);
}

#[tokio::test]
async fn a_drain_flips_readiness_first_then_advises_then_closes_1012_then_ends() {
    let mut drain = DrainConfig::default();
    drain
        .set_lb_delay(Duration::from_millis(300))
        .set_linger(Duration::from_millis(100))
        .set_deadline(Duration::from_secs(10));
    let server = Server::builder()
        .config(ServerConfig::default().with_drain(drain))
        .methods(demo::methods())
        .build();
    let addr = common::start(&server).await;
    let (mut a, _) = Raw::connected(addr, None).await;
    let (mut b, _) = Raw::connected(addr, None).await;
    assert_eq!(
        common::http_call(addr, "GET", "/readyz", None).await.status,
        200
    );

    server.drain();
    // Readiness flips before any client hears about it.
    assert_eq!(
        common::http_call(addr, "GET", "/readyz", None).await.status,
        503
    );
    for raw in [&mut a, &mut b] {
        let Some(ServerMessage::Reconnect(advice)) = raw.recv_skipping_pings().await else {
            panic!("advice before the close")
        };
        assert_eq!(advice.reason, "deploy");
        assert!(advice.message.is_some(), "a human-readable reason");
        assert!(matches!(
            raw.closed_within(SOON).await,
            Closed::Frame(1012, _)
        ));
    }
    tokio::time::timeout(SOON, server.drained())
        .await
        .expect("drained");
    assert_eq!(server.lifecycle(), Lifecycle::Drained);
}

#[tokio::test]
async fn a_request_in_flight_is_answered_before_the_drain_closes_its_connection() {
    let mut drain = DrainConfig::default();
    drain
        .set_lb_delay(Duration::from_millis(10))
        .set_linger(Duration::from_millis(800))
        .set_deadline(Duration::from_secs(10));
    let server = Server::builder()
        .config(ServerConfig::default().with_drain(drain))
        .methods(demo::methods())
        .build();
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&ClientMessage::Request(Request {
        id: 9,
        method: "slow".into(),
        params: json!(300),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    server.drain();
    let mut answered = false;
    loop {
        match raw.recv_skipping_pings().await {
            Some(ServerMessage::Response(r)) => {
                assert_eq!(r.id, 9);
                answered = true;
            }
            Some(_) => {}
            None => break,
        }
    }
    assert!(answered, "the response went out before the close");
}

async fn subscribe_answer(raw: &mut Raw, channel: &str) -> ServerMessage {
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    }))
    .await;
    raw.recv_skipping_pings()
        .await
        .expect("an answer to subscribe")
}

fn refused(answer: &ServerMessage, channel: &str, code: &str) -> bool {
    matches!(answer, ServerMessage::Unsubscribed(u) if u.channel == channel && u.code == code)
}

#[tokio::test]
async fn subscriptions_per_connection_and_channels_per_server_are_capped() {
    let mut limits = Limits::default();
    limits.set_max_subscriptions(2);
    let mut history = belay_server::broker::HistoryLimits::default();
    history.max_channels = 3;
    let server = Server::builder()
        .config(
            ServerConfig::default()
                .with_limits(limits)
                .with_history(history),
        )
        .methods(demo::methods())
        .build();
    let addr = common::start(&server).await;
    let (mut a, _) = Raw::connected(addr, None).await;
    let (mut b, _) = Raw::connected(addr, None).await;

    // One connection: two subscriptions, the third is refused for good
    // (`forbidden`), a repeat of one it holds is still answered, and the
    // connection keeps working.
    for channel in ["a1", "a2"] {
        let answer = subscribe_answer(&mut a, channel).await;
        assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    }
    let answer = subscribe_answer(&mut a, "a3").await;
    assert!(refused(&answer, "a3", "forbidden"), "{answer:?}");
    let answer = subscribe_answer(&mut a, "a1").await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    echo_works(&mut a, 1).await;

    // The server: a third channel fits, a fourth is refused with the
    // non-final `unavailable` (publishing, the application's own call, is
    // never refused: the broker's unit tests cover a new channel).
    let answer = subscribe_answer(&mut b, "b1").await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    let answer = subscribe_answer(&mut b, "b2").await;
    assert!(refused(&answer, "b2", "unavailable"), "{answer:?}");
    let ServerMessage::Unsubscribed(u) = &answer else {
        unreachable!()
    };
    assert_eq!(u.reason, "too many channels on the server");
    server.publish("a1", json!(1)).await.expect("published");
    echo_works(&mut b, 2).await;

    // When `b1` is left, nothing was ever published on it and nobody
    // listens, so it is forgotten and `b2` fits (the unsubscribe takes
    // effect asynchronously: retry within a bound, as the client would).
    b.send(&ClientMessage::Unsubscribe(
        belay_proto::message::Unsubscribe {
            channel: "b1".into(),
        },
    ))
    .await;
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let answer = subscribe_answer(&mut b, "b2").await;
        if matches!(answer, ServerMessage::Subscribed(_)) {
            break;
        }
        assert!(refused(&answer, "b2", "unavailable"), "{answer:?}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "b1 was never forgotten"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let metrics = common::http_call(addr, "GET", "/metrics", None).await;
    assert!(
        metrics.body.contains("belay_subscribe_refusals_total"),
        "{}",
        metrics.body
    );
}
