//! The client against servers scripted in the test (127.0.0.1, port 0):
//! a refused upgrade's `Retry-After`, a frame over the 1 MiB limit from the
//! server, a request over it from the caller. Nothing sleeps to synchronise;
//! the one test that needs real time (Retry-After) measures it with a
//! generous bound, and the oversized frame is paced, not waited on.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use belay_client::{Client, ClientEvent, RequestError};
use belay_proto::message::MAX_FRAME_LEN;
use belay_proto::{DisconnectReason, Event, Failure};
use common::event_where;
use common::scripted::{
    accept, echo_until_closed, establish, frame_header, listen, read_client_frame, refuse,
    text_frame_header, BOUND,
};
use serde_json::json;
use tokio::io::AsyncWriteExt;

fn rejected(event: &ClientEvent) -> Option<Failure> {
    match event {
        ClientEvent::Session(Event::ConnectFailed {
            reason: DisconnectReason::TransportFailed { failure },
            ..
        }) => Some(failure.clone()),
        _ => None,
    }
}

#[tokio::test]
async fn an_upgrade_refused_with_retry_after_is_not_redialed_before_it() {
    let (listener, url) = listen().await;
    // The default config: server-paced backoff, whose first window (< 1 s)
    // is what redialed a `503 Retry-After: 5` after 0.93 s.
    let client = Client::builder(url).connect().expect("a usable URL");
    let mut events = client.events();

    let first = accept(&listener).await;
    let first_at = Instant::now();
    refuse(first, "503 Service Unavailable", &["Retry-After: 1"]).await;
    let failed = event_where(&mut events, "the refused upgrade", |e| {
        rejected(e).is_some()
    })
    .await;
    let _second = accept(&listener).await;
    let waited = first_at.elapsed();
    println!("Retry-After: 1 -> redialed after {waited:?}");
    // The core draws the redial in [R, 2R) = [1 s, 2 s) after the refusal.
    assert!(
        waited >= Duration::from_secs(1),
        "redialed {waited:?} after a Retry-After: 1"
    );
    assert!(
        waited < Duration::from_millis(2_500),
        "redialed {waited:?} after a Retry-After: 1 (advice is [1 s, 2 s))"
    );
    assert_eq!(
        rejected(&failed),
        Some(Failure::Rejected {
            status: 503,
            retry_after_ms: Some(1_000)
        })
    );
    client.close().await;
}

#[tokio::test]
async fn a_rate_limited_upgrade_reports_its_retry_after_and_ignores_dates_and_garbage() {
    for (status, header, expected) in [
        ("429 Too Many Requests", "Retry-After: 3", Some(3_000)),
        (
            "503 Service Unavailable",
            "Retry-After: Fri, 31 Dec 2027 23:59:59 GMT",
            None,
        ),
        ("503 Service Unavailable", "Retry-After: soon", None),
        (
            "503 Service Unavailable",
            "Retry-After: 99999999999999999999999",
            Some(3_600_000),
        ),
    ] {
        let (listener, url) = listen().await;
        let client = Client::builder(url).connect().expect("a usable URL");
        let mut events = client.events();
        refuse(accept(&listener).await, status, &[header]).await;
        let failed = event_where(&mut events, "the refused upgrade", |e| {
            rejected(e).is_some()
        })
        .await;
        let code: u16 = status[..3].parse().unwrap();
        assert_eq!(
            rejected(&failed),
            Some(Failure::Rejected {
                status: code,
                retry_after_ms: expected
            }),
            "{status} {header}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn a_frame_over_the_limit_is_refused_from_its_header_and_closed_1009() {
    const ANNOUNCED: u64 = 60 << 20;
    const CHUNK: usize = 64 << 10;
    let (listener, url) = listen().await;
    let client = Client::builder(url).connect().expect("a usable URL");
    let mut events = client.events();

    let ws = establish(accept(&listener).await).await;
    client.ready().await.expect("ready");
    let (mut reader, mut writer) = ws.into_inner().into_split();
    // What the client sends from now on: its close frame, we expect.
    let close_code = tokio::spawn(async move {
        while let Some((opcode, payload)) = read_client_frame(&mut reader).await {
            if opcode == 0x8 {
                return payload.get(..2).map(|c| u16::from_be_bytes([c[0], c[1]]));
            }
        }
        None
    });
    // The frame: a header announcing 60 MiB, then its payload in 64 KiB
    // chunks, paced so that a client buffering the whole frame shows it.
    let written = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&written);
    let streamer = tokio::spawn(async move {
        writer
            .write_all(&text_frame_header(ANNOUNCED))
            .await
            .expect("header");
        let chunk = vec![b'a'; CHUNK];
        let mut sent = 0;
        while sent < ANNOUNCED {
            if writer.write_all(&chunk).await.is_err() {
                break;
            }
            sent += CHUNK as u64;
            counter.store(sent, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    });

    let lost = event_where(&mut events, "the disconnect", |e| {
        matches!(e, ClientEvent::Session(Event::Disconnected { .. }))
    })
    .await;
    let written_then = written.load(Ordering::SeqCst);
    assert!(
        written_then < 8 << 20,
        "the client gave up only after {written_then} bytes of the frame were written: {lost:?}"
    );
    assert!(
        matches!(
            lost,
            ClientEvent::Session(Event::Disconnected {
                reason: DisconnectReason::TransportFailed {
                    failure: Failure::Network { .. }
                },
                ..
            })
        ),
        "{lost:?}"
    );
    let code = tokio::time::timeout(BOUND, close_code)
        .await
        .expect("the client's close within the bound")
        .expect("reader");
    assert_eq!(code, Some(1009), "closed with 1009 (message too big)");
    // The server's writes fail soon after the close: the rest is never read.
    tokio::time::timeout(BOUND, streamer)
        .await
        .expect("the stream ends within the bound")
        .expect("streamer");
    let total = written.load(Ordering::SeqCst);
    println!(
        "60 MiB frame announced: the client failed after {written_then} bytes were written, {total} in all"
    );
    assert!(total < ANNOUNCED / 2, "{total} bytes accepted in all");
    client.close().await;
}

#[tokio::test]
async fn a_fragmented_message_over_the_limit_is_refused_and_closed_1009() {
    // Two fragments of 768 KiB: each under the limit, the message over it.
    const FRAGMENT: usize = 768 << 10;
    let (listener, url) = listen().await;
    let client = Client::builder(url).connect().expect("a usable URL");
    let mut events = client.events();
    let ws = establish(accept(&listener).await).await;
    client.ready().await.expect("ready");
    let (mut reader, mut writer) = ws.into_inner().into_split();
    let payload = vec![b'a'; FRAGMENT];
    writer
        .write_all(&frame_header(0x01, FRAGMENT as u64))
        .await
        .expect("write");
    writer.write_all(&payload).await.expect("write");
    writer
        .write_all(&frame_header(0x80, FRAGMENT as u64))
        .await
        .expect("write");
    // The client may already have closed: the rest need not arrive.
    let _ = writer.write_all(&payload).await;

    let lost = event_where(&mut events, "the disconnect", |e| {
        matches!(e, ClientEvent::Session(Event::Disconnected { .. }))
    })
    .await;
    assert!(
        matches!(
            lost,
            ClientEvent::Session(Event::Disconnected {
                reason: DisconnectReason::TransportFailed {
                    failure: Failure::Network { .. }
                },
                ..
            })
        ),
        "{lost:?}"
    );
    let close = tokio::time::timeout(BOUND, async {
        while let Some((opcode, payload)) = read_client_frame(&mut reader).await {
            if opcode == 0x8 {
                return Some(payload);
            }
        }
        None
    })
    .await
    .expect("the client's close within the bound")
    .expect("a close frame");
    assert_eq!(&close[..2], &1009u16.to_be_bytes(), "closed with 1009");
    assert_eq!(&close[2..], b"frame too large");
    client.close().await;
}

#[tokio::test]
async fn a_request_over_the_frame_limit_is_refused_unsent_and_the_connection_stays_usable() {
    let (listener, url) = listen().await;
    let client = Client::builder(url).connect().expect("a usable URL");
    let server = tokio::spawn(async move {
        let mut ws = establish(accept(&listener).await).await;
        echo_until_closed(&mut ws).await
    });
    client.ready().await.expect("ready");

    let big = "x".repeat(2 << 20);
    let asked = Instant::now();
    let refused = tokio::time::timeout(BOUND, client.request("echo", json!(big)))
        .await
        .expect("settled");
    let took = asked.elapsed();
    match refused {
        Err(RequestError::TooLarge { len, max }) => {
            assert_eq!(max, MAX_FRAME_LEN);
            assert!(len > 2 << 20, "{len}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(
        took < Duration::from_secs(1),
        "refused at once, took {took:?}"
    );

    let small = tokio::time::timeout(BOUND, client.request("echo", json!({"small": 1})))
        .await
        .expect("settled");
    // (Compared as JSON whatever type the result has.)
    assert_eq!(small.expect("answered"), json!({"small": 1}));
    assert!(client.status().borrow().ready, "still connected");
    client.close().await;

    let received = tokio::time::timeout(BOUND, server)
        .await
        .expect("the server's session ends")
        .expect("server");
    let requests: Vec<_> = received.iter().filter(|f| f["type"] == "request").collect();
    assert_eq!(
        requests.len(),
        1,
        "only the small request went out: {requests:?}"
    );
    assert_eq!(requests[0]["params"], json!({"small": 1}));
}
