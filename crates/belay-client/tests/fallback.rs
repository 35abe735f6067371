//! The SSE + HTTP fallback, end to end: with WebSocket upgrades blocked (the
//! server answers the upgrade 400, as it does when a proxy strips the
//! `Upgrade` header) the client becomes ready over the fallback; when the
//! block lifts it goes back to WebSocket at a quiet moment, with no gap, no
//! duplicate and every request settled.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::IntoResponse;
use belay_client::{Client, Item};
use belay_proto::{FallbackConfig, TransportKind};
use common::{builder, demo_server, demo_server_with_slow_ping, status_where, DemoServer, SOON};
use serde_json::json;
use tokio::net::TcpListener;

/// Serve the demo with `/ws` answered 400 while `blocked` is set.
async fn start_blockable(server: &DemoServer, blocked: Arc<AtomicBool>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving: belay_server::Server = (**server).clone();
    let router = server
        .demo
        .router(&serving)
        .layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let blocked = Arc::clone(&blocked);
                async move {
                    if blocked.load(Ordering::SeqCst) && request.uri().path() == "/ws" {
                        return (StatusCode::BAD_REQUEST, "expected a WebSocket upgrade")
                            .into_response();
                    }
                    next.run(request).await
                }
            },
        ));
    tokio::spawn(async move {
        let _ = serving.serve(listener, router).await;
    });
    addr
}

fn client(addr: SocketAddr, retry_websocket_every: Duration) -> Client {
    let mut fallback = FallbackConfig::default();
    fallback.set_retry_websocket_every(retry_websocket_every);
    builder(addr)
        .fallback(Some(fallback))
        .connect()
        .expect("a usable URL")
}

#[tokio::test]
async fn with_upgrades_blocked_the_client_is_ready_over_the_fallback() {
    let server = demo_server();
    let addr = start_blockable(&server, Arc::new(AtomicBool::new(true))).await;
    let client = client(addr, Duration::from_secs(600));
    let mut feed = client.subscribe("news").await.expect("subscribed");
    tokio::time::timeout(SOON, client.ready())
        .await
        .expect("ready in time")
        .expect("ready");
    assert_eq!(client.status().borrow().transport, TransportKind::Sse);
    let echoed = client
        .request("echo", json!({"over": "sse"}))
        .await
        .expect("answered");
    assert_eq!(echoed, json!({"over": "sse"}));
    let published = server.publish("news", json!(1)).await.expect("published");
    match tokio::time::timeout(SOON, feed.next())
        .await
        .expect("in time")
    {
        Some(Item::Publication(p)) => assert_eq!(p.offset, published.offset),
        other => panic!("{other:?}"),
    }
    client.close().await;
}

#[tokio::test]
async fn without_the_fallback_a_blocked_upgrade_never_connects() {
    let server = demo_server();
    let addr = start_blockable(&server, Arc::new(AtomicBool::new(true))).await;
    let client = builder(addr)
        .fallback(None)
        .connect()
        .expect("a usable URL");
    let mut status = client.status();
    let failed = status_where(&mut status, "two failed attempts", |s| s.attempts >= 2).await;
    assert!(!failed.ready);
    assert_eq!(server.metrics().open_connections(), 0);
    client.close().await;
}

#[tokio::test]
async fn when_the_block_lifts_the_client_goes_back_to_websocket_without_a_gap() {
    let server = demo_server();
    let blocked = Arc::new(AtomicBool::new(true));
    let addr = start_blockable(&server, Arc::clone(&blocked)).await;
    let client = client(addr, Duration::from_millis(300));
    let mut feed = client.subscribe("news").await.expect("subscribed");
    let mut status = client.status();
    status_where(&mut status, "ready over SSE", |s| {
        s.ready && s.transport == TransportKind::Sse
    })
    .await;
    // Publications keep coming through the switch.
    let publisher = {
        let server = (*server).clone();
        tokio::spawn(async move {
            let mut last = 0;
            for n in 0..60 {
                last = server
                    .publish("news", json!(n))
                    .await
                    .expect("published")
                    .offset;
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            last
        })
    };
    // A request in flight when the block lifts: the switch waits for it.
    let slow = {
        let client = client.clone();
        tokio::spawn(async move {
            let answer = client.request("slow", json!(400)).await;
            (answer, tokio::time::Instant::now())
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    blocked.store(false, Ordering::SeqCst);
    // Meanwhile, short requests one after another, each with the instant
    // its outcome came.
    let chatter = {
        let client = client.clone();
        tokio::spawn(async move {
            let mut outcomes = Vec::new();
            while client.status().borrow().transport == TransportKind::Sse {
                let outcome = client.request("slow", json!(5)).await;
                outcomes.push((outcome, tokio::time::Instant::now()));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            outcomes
        })
    };
    status_where(&mut status, "ready over WebSocket", |s| {
        s.ready && s.transport == TransportKind::WebSocket
    })
    .await;
    let (answer, slow_done) = slow.await.expect("task");
    assert!(
        answer.is_ok(),
        "the request in flight settled with its answer"
    );
    // While the switch waited for the slow request, the session kept
    // taking the others and every one was answered. Only in the one
    // reconnect after it (no open transport) may one be refused, unsent.
    let outcomes = chatter.await.expect("task");
    let (waiting, after): (Vec<_>, Vec<_>) = outcomes.iter().partition(|(_, at)| *at < slow_done);
    assert!(
        !waiting.is_empty(),
        "requests were made while the switch waited"
    );
    assert!(
        waiting.iter().all(|(outcome, _)| outcome.is_ok()),
        "none refused or lost while the switch waited: {waiting:?}"
    );
    assert!(
        after.iter().all(|(outcome, _)| matches!(
            outcome,
            Ok(_) | Err(belay_client::RequestError::NotReady)
        )),
        "{after:?}"
    );
    let last = publisher.await.expect("publisher");
    let mut offsets = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), async {
        while offsets.last() != Some(&last) {
            match feed.next().await.expect("the stream lives") {
                Item::Publication(p) => offsets.push(p.offset),
                other => panic!("{other:?}"),
            }
        }
    })
    .await
    .expect("every publication in time");
    let first = offsets[0];
    assert_eq!(
        offsets,
        (first..=last).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
    assert_eq!(server.metrics().open_connections(), 1, "one live transport");
    client.close().await;
}

#[tokio::test]
async fn a_switch_that_finds_no_quiet_moment_refuses_new_requests_only_after_its_bound() {
    let server = demo_server();
    let blocked = Arc::new(AtomicBool::new(true));
    let addr = start_blockable(&server, Arc::clone(&blocked)).await;
    let mut fallback = FallbackConfig::default();
    fallback
        .set_retry_websocket_every(Duration::from_millis(100))
        .set_switch_within(Duration::from_millis(200));
    let client = builder(addr)
        .fallback(Some(fallback))
        .connect()
        .expect("a usable URL");
    let mut status = client.status();
    status_where(&mut status, "ready over SSE", |s| {
        s.ready && s.transport == TransportKind::Sse
    })
    .await;
    let slow = {
        let client = client.clone();
        tokio::spawn(async move { client.request("slow", json!(1500)).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    blocked.store(false, Ordering::SeqCst);
    // The probe opens within 100 ms and the bound is 200 ms after it: by
    // 700 ms the session refuses new requests, still on the stream.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(client.status().borrow().transport, TransportKind::Sse);
    assert!(
        matches!(
            client.request("slow", json!(1)).await,
            Err(belay_client::RequestError::NotReady)
        ),
        "refused, never sent"
    );
    status_where(&mut status, "ready over WebSocket", |s| {
        s.ready && s.transport == TransportKind::WebSocket
    })
    .await;
    assert!(
        slow.await.expect("task").is_ok(),
        "the request in flight settled with its answer"
    );
    client.close().await;
}

/// Serve the demo with `/ws` always answered 400 and the next `fail` sends
/// (`/sse/send`) answered 502 by a gateway that never passes them on.
async fn start_with_failing_sends(server: &DemoServer, fail: Arc<AtomicUsize>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving: belay_server::Server = (**server).clone();
    let router = server
        .demo
        .router(&serving)
        .layer(axum::middleware::from_fn(
            move |request: Request, next: Next| {
                let fail = Arc::clone(&fail);
                async move {
                    let path = request.uri().path();
                    if path == "/ws" {
                        return (StatusCode::BAD_REQUEST, "no upgrade").into_response();
                    }
                    let failing = path == "/sse/send"
                        && fail
                            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                            .is_ok();
                    if failing {
                        return (StatusCode::BAD_GATEWAY, "upstream hiccup").into_response();
                    }
                    next.run(request).await
                }
            },
        ));
    tokio::spawn(async move {
        let _ = serving.serve(listener, router).await;
    });
    addr
}

#[tokio::test]
async fn a_send_answered_502_is_retried_on_the_same_stream() {
    let server = demo_server();
    let fail = Arc::new(AtomicUsize::new(0));
    let addr = start_with_failing_sends(&server, Arc::clone(&fail)).await;
    let client = client(addr, Duration::from_secs(60));
    let mut status = client.status();
    status_where(&mut status, "ready over SSE", |s| {
        s.ready && s.transport == TransportKind::Sse
    })
    .await;
    let streams = client.status().borrow().attempts;
    // Retried at once, then after 500 ms: the third attempt gets through.
    fail.store(2, Ordering::SeqCst);
    let answer = tokio::time::timeout(SOON, client.request("slow", json!(1)))
        .await
        .expect("answered in time");
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(fail.load(Ordering::SeqCst), 0, "both failures were met");
    assert_eq!(
        client.status().borrow().attempts,
        streams,
        "the same stream"
    );
    client.close().await;
}

#[tokio::test]
async fn a_send_that_keeps_failing_gives_the_stream_up() {
    let server = demo_server_with_slow_ping();
    let fail = Arc::new(AtomicUsize::new(0));
    let addr = start_with_failing_sends(&server, Arc::clone(&fail)).await;
    let client = client(addr, Duration::from_secs(60));
    let mut status = client.status();
    status_where(&mut status, "ready over SSE", |s| {
        s.ready && s.transport == TransportKind::Sse
    })
    .await;
    // Four attempts (at once, +0, +500 ms, +2 s), then the stream fails:
    // the request's fate is unknown and the session reconnects.
    fail.store(4, Ordering::SeqCst);
    let answer = tokio::time::timeout(SOON, client.request("slow", json!(1)))
        .await
        .expect("settled in time");
    assert!(
        matches!(answer, Err(belay_client::RequestError::ConnectionClosed)),
        "{answer:?}"
    );
    assert_eq!(
        fail.load(Ordering::SeqCst),
        0,
        "four attempts; {:?}",
        client.status().borrow().last_disconnect
    );
    status_where(&mut status, "ready again over SSE", |s| {
        s.ready && s.transport == TransportKind::Sse
    })
    .await;
    client.close().await;
}
