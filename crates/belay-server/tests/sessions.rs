//! Sessions end to end over a raw WebSocket: handshake, requests,
//! idempotency, channels with recovery, per-message authorization.

mod common;

use std::time::Instant;

use belay_demo as demo;
use belay_proto::message::{
    ClientMessage, Reply, Request, ServerMessage, StreamPosition, Subscribe, Subscribed,
};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::broker::HistoryLimits;
use belay_server::{Server, ServerConfig};
use common::{Closed, Raw, SOON};
use serde_json::json;

fn request(id: u64, method: &str, params: serde_json::Value, idem: Option<&str>) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: method.into(),
        params,
        idem: idem.map(str::to_owned),
        timeout_ms: Some(5_000),
    })
}

fn demo_server() -> Server {
    Server::builder().methods(demo::methods()).build()
}

#[tokio::test]
async fn welcome_advertises_the_ping_interval_and_pacing_slots() {
    let server = demo_server();
    let addr = common::start(&server).await;
    let (_raw, welcome) = Raw::connected(addr, None).await;
    let ServerMessage::Welcome(welcome) = welcome else {
        unreachable!()
    };
    assert_eq!(welcome.protocol, 1);
    assert_eq!(welcome.ping_interval_ms, Some(8_000));
    let pacing = welcome.pacing.expect("pacing while healthy");
    assert!(pacing.phase_ms < pacing.period_ms);
    assert_eq!(server.metrics().open_connections(), 1);
}

#[tokio::test]
async fn every_request_gets_exactly_one_response() {
    let server = demo_server();
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&request(1, "echo", json!({"a": 1}), None)).await;
    raw.send(&request(2, "no.such.method", json!(null), None))
        .await;
    let mut replies = Vec::new();
    for _ in 0..2 {
        let Some(ServerMessage::Response(r)) = raw.recv_skipping_pings().await else {
            panic!("a response")
        };
        replies.push((r.id, r.reply));
    }
    replies.sort_by_key(|(id, _)| *id);
    assert_eq!(replies[0], (1, Reply::Result(json!({"a": 1}).into())));
    assert!(matches!(&replies[1], (2, Reply::Error(e)) if e.code == "unknown_method"));
}

#[tokio::test]
async fn a_retried_request_with_the_same_idempotency_key_returns_the_first_result() {
    let server = demo_server();
    let addr = common::start(&server).await;
    let (mut first, _) = Raw::connected(addr, None).await;
    first
        .send(&request(1, "order.create", json!("book"), Some("k-1")))
        .await;
    let Some(ServerMessage::Response(a)) = first.recv_skipping_pings().await else {
        panic!()
    };
    // The retry arrives on a new connection, as after a reconnect.
    let (mut second, _) = Raw::connected(addr, None).await;
    second
        .send(&request(7, "order.create", json!("book"), Some("k-1")))
        .await;
    second
        .send(&request(8, "order.create", json!("book"), Some("k-2")))
        .await;
    let Some(ServerMessage::Response(b)) = second.recv_skipping_pings().await else {
        panic!()
    };
    let Some(ServerMessage::Response(c)) = second.recv_skipping_pings().await else {
        panic!()
    };
    let (b, c) = if b.id == 7 { (b, c) } else { (c, b) };
    let order = |r: &Reply| match r {
        Reply::Result(v) => v.to_value().unwrap()["order"].as_u64().unwrap(),
        Reply::Error(e) => panic!("{e:?}"),
    };
    assert_eq!(
        order(&a.reply),
        order(&b.reply),
        "the retry did not create a second order"
    );
    assert_ne!(
        order(&b.reply),
        order(&c.reply),
        "another key is another order"
    );
}

/// A server with these history bounds and a session subscribed to `news`
/// (with the confirmation it got).
async fn subscribed_with_history(
    history: HistoryLimits,
) -> (Server, std::net::SocketAddr, Raw, Subscribed) {
    let server = Server::builder()
        .config(ServerConfig::default().with_history(history))
        .build();
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("the first subscribe is confirmed")
    };
    (server, addr, raw, first)
}

async fn subscribe(raw: &mut Raw, channel: &str, since: Option<StreamPosition>) -> ServerMessage {
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since,
        token: None,
    }))
    .await;
    raw.recv_skipping_pings()
        .await
        .expect("an answer to subscribe")
}

#[tokio::test]
async fn a_resumed_subscription_replays_what_was_missed_in_order() {
    let server = demo_server();
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!()
    };
    assert!(!first.recovered);
    for n in 1..=5 {
        server.publish("news", json!(n)).await.expect("published");
    }
    let since = StreamPosition {
        epoch: first.epoch.clone(),
        offset: 2,
    };
    let (mut again, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(resumed) = subscribe(&mut again, "news", Some(since)).await
    else {
        panic!()
    };
    assert!(resumed.recovered);
    assert_eq!(resumed.offset, 2);
    let mut offsets = Vec::new();
    for _ in 0..3 {
        let Some(ServerMessage::Publication(p)) = again.recv_skipping_pings().await else {
            panic!()
        };
        offsets.push(p.offset);
    }
    assert_eq!(offsets, vec![3, 4, 5]);
    // Live publications follow without a gap or a duplicate.
    server.publish("news", json!(6)).await.expect("published");
    let Some(ServerMessage::Publication(p)) = again.recv_skipping_pings().await else {
        panic!()
    };
    assert_eq!(p.offset, 6);
}

#[tokio::test]
async fn without_enough_history_the_server_says_so_and_replays_nothing() {
    let mut history = HistoryLimits::default();
    history.max_len = 2;
    let (server, addr, _first_session, first) = subscribed_with_history(history).await;
    for n in 1..=5 {
        server.publish("news", json!(n)).await.expect("published");
    }
    let (mut again, _) = Raw::connected(addr, None).await;
    let since = StreamPosition {
        epoch: first.epoch,
        offset: 1,
    };
    let ServerMessage::Subscribed(resumed) = subscribe(&mut again, "news", Some(since)).await
    else {
        panic!()
    };
    assert!(!resumed.recovered);
    assert_eq!(resumed.offset, 5, "the client resyncs from the current top");
    server.publish("news", json!(6)).await.expect("published");
    let Some(ServerMessage::Publication(p)) = again.recv_skipping_pings().await else {
        panic!()
    };
    assert_eq!(
        p.offset, 6,
        "no partial replay came before the live publication"
    );
}

/// When the `expiring` token's credentials run out: a second after the test
/// binary first asks.
static EXPIRY: std::sync::LazyLock<Instant> =
    std::sync::LazyLock::new(|| Instant::now() + std::time::Duration::from_secs(1));

/// Tokens are user names; `alice` may use `alice.*` only; `expired` expires at once.
struct Tokens;

impl Authenticator for Tokens {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        match token {
            Some("alice") => Ok(Principal::user("alice")),
            Some("expiring") => Ok(Principal::user("exp").expiring_at(*EXPIRY)),
            _ => Err(AuthError::Unauthorized("bad token".into())),
        }
    }

    fn authorize_subscribe(&self, p: &Principal, channel: &str) -> Result<(), AuthError> {
        if channel.starts_with(&format!("{}.", p.user)) {
            Ok(())
        } else {
            Err(AuthError::Forbidden(channel.into()))
        }
    }

    fn authorize_request(&self, _p: &Principal, method: &str) -> Result<(), AuthError> {
        if method.starts_with("admin.") {
            Err(AuthError::Forbidden(method.into()))
        } else {
            Ok(())
        }
    }
}

#[tokio::test]
async fn every_subscribe_and_request_is_authorized() {
    let server = Server::builder()
        .authenticator(Tokens)
        .methods(demo::methods())
        .build();
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, Some("alice")).await;
    assert!(matches!(
        subscribe(&mut raw, "alice.inbox", None).await,
        ServerMessage::Subscribed(_)
    ));
    let ServerMessage::Unsubscribed(refused) = subscribe(&mut raw, "bob.inbox", None).await else {
        panic!()
    };
    assert_eq!(refused.code, "forbidden");
    raw.send(&request(1, "admin.reset", json!(null), None))
        .await;
    let Some(ServerMessage::Response(r)) = raw.recv_skipping_pings().await else {
        panic!()
    };
    assert!(matches!(r.reply, Reply::Error(e) if e.code == "forbidden"));
}

#[tokio::test]
async fn bad_credentials_are_closed_with_4001() {
    let server = Server::builder().authenticator(Tokens).build();
    let addr = common::start(&server).await;
    let mut raw = Raw::open(addr).await;
    raw.send(&ClientMessage::Connect(belay_proto::message::Connect {
        protocol: 1,
        token: Some("mallory".into()),
        session: None,
    }))
    .await;
    assert_eq!(
        raw.closed_within(SOON).await,
        Closed::Frame(4001, "unauthorized: bad token".into())
    );
}

#[tokio::test]
async fn expired_credentials_close_the_session_at_the_next_message() {
    let server = Server::builder()
        .authenticator(Tokens)
        .methods(demo::methods())
        .build();
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, Some("expiring")).await;
    // Wait for the credentials' own deadline (the behaviour under test).
    tokio::time::sleep_until((*EXPIRY).into()).await;
    raw.send(&request(1, "echo", json!(1), None)).await;
    assert_eq!(
        raw.closed_within(SOON).await,
        Closed::Frame(4001, "credentials expired".into())
    );
}

#[tokio::test]
async fn a_client_close_is_answered_at_once() {
    use futures_util::SinkExt;
    let server = demo_server();
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let started = std::time::Instant::now();
    raw.ws
        .send(tokio_websockets::Message::close(
            Some(tokio_websockets::CloseCode::NORMAL_CLOSURE),
            "bye",
        ))
        .await
        .unwrap();
    let closed = raw.closed_within(SOON).await;
    assert!(matches!(closed, Closed::Frame(1000, _)), "{closed:?}");
    // The reply does not wait behind the server's writer timeout (2 s).
    assert!(started.elapsed() < std::time::Duration::from_millis(1_500));
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_the_live_buffer_is_told_and_recovers() {
    let mut history = HistoryLimits::default();
    history.live_buffer = 4;
    let (server, _, mut raw, first) = subscribed_with_history(history).await;
    // On this single-threaded runtime the connection's task cannot run
    // while the test publishes, so ten publications in a row overrun a
    // live buffer of four.
    for n in 1..=10 {
        server.publish("news", json!(n)).await.expect("published");
    }
    // What fitted in the live buffer arrives, in order, then the notice.
    let mut last = first.offset;
    loop {
        match raw.recv_skipping_pings().await {
            Some(ServerMessage::Publication(p)) => {
                assert_eq!(p.offset, last + 1);
                last = p.offset;
            }
            Some(ServerMessage::Unsubscribed(u)) => {
                assert_eq!((u.channel.as_str(), u.code.as_str()), ("news", "lagged"));
                break;
            }
            other => panic!("expected publications then unsubscribed lagged, got {other:?}"),
        }
    }
    assert!(last < 10, "the buffer of four could not hold all ten");
    // Resubscribing from its position replays every later publication, in order.
    let since = StreamPosition {
        epoch: first.epoch,
        offset: last,
    };
    let ServerMessage::Subscribed(resumed) = subscribe(&mut raw, "news", Some(since)).await else {
        panic!()
    };
    assert!(resumed.recovered);
    for n in last + 1..=10 {
        let Some(ServerMessage::Publication(p)) = raw.recv_skipping_pings().await else {
            panic!()
        };
        assert_eq!((p.offset, p.data.clone()), (n, json!(n).into()));
    }
}

#[tokio::test]
async fn a_replay_larger_than_the_write_buffer_arrives_without_waiting_for_a_ping() {
    let server = Server::builder().build();
    let addr = common::start(&server).await;
    // Three publications of 40 KB: more than the 64 KiB the connection
    // buffers for writing at once, so the replay waits in the queue.
    let big = "x".repeat(40 * 1024);
    for n in 1..=3 {
        server
            .publish("big", json!({ "n": n, "pad": big }))
            .await
            .expect("published");
    }
    let (mut raw, _) = Raw::connected(addr, None).await;
    let since = StreamPosition {
        epoch: server
            .publish("other", json!(0))
            .await
            .expect("published")
            .epoch,
        offset: 0,
    };
    // `other`'s epoch is the broker's epoch, so this resumes from offset 0.
    let ServerMessage::Subscribed(s) = subscribe(&mut raw, "big", Some(since)).await else {
        panic!()
    };
    assert!(s.recovered);
    for n in 1..=3 {
        let next = tokio::time::timeout(SOON, raw.recv_skipping_pings())
            .await
            .expect("the replay arrives without waiting for a heartbeat");
        let Some(ServerMessage::Publication(p)) = next else {
            panic!("{next:?}")
        };
        assert_eq!(p.data.to_value().unwrap()["n"], json!(n));
    }
}
