//! Behaviour users expect (issue 41) against a real server: `history` and
//! `presence_stats` typed, a request that waits for readiness only when
//! asked to (and still ends typed), server errors with their typed code
//! and `retry_after_ms`, a status that keeps the loss apart from the
//! failed redial after it, and a builder whose setters' order does not
//! matter. Nothing sleeps to synchronise.

mod common;

use std::time::{Duration, Instant};

use belay_client::{
    BuildError, Client, ErrorCode, HistoryError, HistoryOptions, RequestError, RequestOptions,
};
use belay_proto::host::HostTiming;
use belay_proto::message::StreamPosition;
use belay_proto::Config;
use belay_server::{ChannelOptions, Namespaces, Server, ServerConfig};
use common::{builder, demo_server, fault, start, status_where, SOON};
use serde_json::json;
use tokio::net::TcpListener;

/// A server with history on `chat:*` (3 kept) and presence on `room:*`.
async fn server() -> (Server, String) {
    let namespaces = Namespaces::new()
        .with("chat:*", ChannelOptions::default().with_history_size(3))
        .with("room:*", ChannelOptions::default().with_presence(true));
    let server = Server::builder()
        .config(ServerConfig::default().with_namespaces(namespaces))
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("ws://{}/ws", listener.local_addr().expect("addr"));
    let serving = server.clone();
    tokio::spawn(async move {
        let _ = serving.serve(listener, serving.router()).await;
    });
    (server, url)
}

/// A loopback port nobody listens on (bound, then freed).
async fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("ws://{addr}/ws")
}

#[tokio::test]
async fn history_and_presence_stats_are_typed() {
    let (server, url) = server().await;
    let mut epoch = String::new();
    for n in 1..=4 {
        epoch = server
            .publish("chat:1", json!({ "n": n }))
            .await
            .expect("published")
            .epoch;
    }
    let client = Client::builder(url).connect().expect("a usable URL");
    let _room = client.subscribe("room:1").await.expect("subscribed");
    client.ready().await.expect("ready");

    let all = client
        .history("chat:1", HistoryOptions::default())
        .await
        .expect("history");
    let offsets: Vec<u64> = all.publications.iter().map(|p| p.offset).collect();
    assert_eq!(offsets, [2, 3, 4]);
    assert_eq!(all.publications[0].data, json!({ "n": 2 }));
    assert_eq!(
        all.position,
        StreamPosition {
            epoch: epoch.clone(),
            offset: 4
        }
    );
    let newest = client
        .history("chat:1", HistoryOptions::default().limit(1).reverse(true))
        .await
        .expect("history");
    assert_eq!(newest.publications.len(), 1);
    assert_eq!(newest.publications[0].offset, 4);
    let lost = client
        .history(
            "chat:1",
            HistoryOptions::default().since(StreamPosition {
                epoch: "gone".into(),
                offset: 1,
            }),
        )
        .await;
    assert!(
        matches!(
            &lost,
            Err(HistoryError::Request(RequestError::Server {
                code: ErrorCode::NotFound,
                ..
            }))
        ),
        "{lost:?}"
    );

    let stats = client.presence_stats("room:1").await.expect("stats");
    assert_eq!((stats.clients, stats.users), (1, 1));
    client.close().await;
}

#[tokio::test]
async fn a_request_before_ready_is_not_ready_unless_asked_to_wait() {
    let (_server, url) = server().await;
    // Nobody listens: the request can only be refused.
    let unreachable = Client::builder(closed_port_url().await)
        .connect()
        .expect("a usable URL");
    assert_eq!(
        unreachable.request("echo", json!(1)).await,
        Err(RequestError::NotReady)
    );
    let started = Instant::now();
    let waited = unreachable
        .request_with(
            "echo",
            json!(1),
            RequestOptions::default().wait_ready(Duration::from_millis(300)),
        )
        .await;
    assert_eq!(waited, Err(RequestError::NotReady));
    assert!(started.elapsed() >= Duration::from_millis(300));

    // Closing the client ends a wait at once, typed.
    let waiting = {
        let client = unreachable.clone();
        tokio::spawn(async move {
            client
                .request_with(
                    "echo",
                    json!(1),
                    RequestOptions::default().wait_ready(Duration::from_secs(600)),
                )
                .await
        })
    };
    let mut status = unreachable.status();
    // The wait is under way once an attempt has failed.
    status_where(&mut status, "a failed attempt", |s| {
        s.last_attempt_failure.is_some()
    })
    .await;
    unreachable.close().await;
    let closed = tokio::time::timeout(SOON, waiting)
        .await
        .expect("settled in time")
        .expect("the task ran");
    assert_eq!(closed, Err(RequestError::Closed));

    // With a server: sent once the session is up, answered.
    let client = Client::builder(url).connect().expect("a usable URL");
    let answered = client
        .request_with(
            "$history",
            json!({ "channel": "chat:none" }),
            RequestOptions::default().wait_ready(SOON),
        )
        .await
        .expect("answered after the wait");
    let answered: serde_json::Value = answered.parse().expect("JSON");
    assert_eq!(answered["offset"], json!(0));
    client.close().await;
}

#[tokio::test]
async fn an_unknown_method_is_a_typed_server_error() {
    let (_server, url) = server().await;
    let client = Client::builder(url).connect().expect("a usable URL");
    client.ready().await.expect("ready");
    let refused = client.request("no.such.method", json!(null)).await;
    assert!(
        matches!(
            &refused,
            Err(RequestError::Server {
                code: ErrorCode::UnknownMethod,
                retry_after_ms: None,
                ..
            })
        ),
        "{refused:?}"
    );
    client.close().await;
}

#[tokio::test]
async fn an_unusable_url_is_an_error_from_connect() {
    for url in ["http://127.0.0.1:1/ws", "not a url", "ws:///no-host"] {
        let built = Client::builder(url).connect();
        assert!(matches!(built, Err(BuildError::Url(_))), "{url}");
    }
}

#[tokio::test]
async fn the_status_keeps_the_loss_apart_from_the_failed_redial() {
    let server = demo_server();
    let addr = start(&server).await;
    let client = builder(addr)
        .fallback(None)
        .connect()
        .expect("a usable URL");
    client.ready().await.expect("ready");
    // The server restarts: the session is lost, and every redial is
    // refused (503) while it is down.
    fault(addr, "restart", r#"{"on":true,"down_ms":5000}"#).await;
    let mut status = client.status();
    let seen = status_where(&mut status, "a loss, then a failed redial", |s| {
        s.last_loss.is_some() && s.last_attempt_failure.is_some()
    })
    .await;
    let loss = seen.last_loss.expect("the loss");
    let failure = seen.last_attempt_failure.expect("the failed redial");
    assert!(loss.was_connected);
    assert!(!failure.was_connected);
    assert_ne!(loss.reason, failure.reason);
    // The last disconnect is the redial's; the loss is kept apart.
    assert_eq!(seen.last_disconnect.map(|d| d.reason), Some(failure.reason));
    client.close().await;
}

#[test]
fn the_builder_gives_the_same_client_whatever_the_setters_order() {
    let mut base = Config::default();
    base.set_request_timeout(Duration::from_secs(3))
        .set_connect_timeout(Duration::from_secs(4));
    let probe = |c: &mut Config| {
        c.set_probe_interval(Duration::from_secs(7));
    };
    let timing = HostTiming::default();
    // Every order of config, configure and host_timing.
    let orders: [[u8; 3]; 6] = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    let mut built = Vec::new();
    for order in orders {
        let mut b = Client::builder("ws://127.0.0.1:1/ws");
        for step in order {
            b = match step {
                0 => b.config(base.clone()),
                1 => b.configure(probe),
                _ => b.host_timing(&timing),
            };
        }
        built.push((b.resolved_config(), b.resolved_host_call_timeout()));
    }
    let first = built[0].clone();
    for (n, each) in built.iter().enumerate() {
        assert_eq!(*each, first, "order {:?}", orders[n]);
    }
    let (config, host_call) = first;
    assert_eq!(config.probe_interval(), Duration::from_secs(7));
    assert_eq!(config.request_timeout(), Duration::from_secs(3));
    assert_eq!(host_call, timing.call_deadline(Duration::from_secs(3)));
}
