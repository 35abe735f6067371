//! Memory a peer can make the server hold is bounded in bytes: the
//! outbound queue of a client that does not read, and the idempotency
//! cache of a client that sends large keyed requests.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::json;

use crate::common::{self, metric, metric_until, Raw, SOON};
#[allow(unused_imports)]
use crate::subscribe;
use crate::{echo_works, request, server};
use belay_server::ServerConfig;

#[tokio::test]
async fn a_client_that_does_not_read_is_closed_4009_at_its_byte_budget_and_gets_the_close() {
    let mut config = ServerConfig::default();
    // 1 024 frames would be allowed; 256 KiB is what it may hold.
    config.limits.set_outbound_bytes(256 * 1024);
    let server = server(config);
    let addr = common::start(&server).await;
    let (mut bystander, _) = Raw::connected(addr, None).await;
    let (mut reader, _) = Raw::connected(addr, None).await;
    reader.send(&crate::subscribe("firehose")).await;
    assert!(matches!(
        reader.recv_skipping_pings().await,
        Some(belay_proto::message::ServerMessage::Subscribed(_))
    ));
    // Publications of 32 KiB, never read: first the socket buffers fill,
    // then the queue, until its byte budget is reached (1 024 frames, the
    // old bound, would be 32 MiB).
    let pad = "p".repeat(32 * 1024);
    let violations = "belay_violations_total{kind=\"slow_consumer\"}";
    for n in 0..1_000u64 {
        server
            .publish("firehose", json!({ "n": n, "pad": pad }))
            .await
            .expect("published");
        if n % 16 == 0 && crate::gauge(&server, violations) > 0.0 {
            break;
        }
    }
    metric_until(addr, violations, |n| n >= 1.0).await;
    // The queue never grew past its budget plus one frame.
    assert!(crate::gauge(&server, "belay_outbound_bytes") <= (256.0 + 33.0) * 1024.0);
    // Reading again, the client gets what was already on its way, then the
    // close frame (the backlog behind it was discarded).
    let deadline = tokio::time::Instant::now() + SOON;
    let close = loop {
        let frame = tokio::time::timeout_at(deadline, reader.ws.next())
            .await
            .expect("the close arrives within the bound");
        match frame {
            Some(Ok(message)) if message.is_close() => {
                break message
                    .as_close()
                    .map(|(c, r)| (u16::from(c), r.to_owned()))
            }
            Some(Ok(_)) => continue,
            other => panic!("the connection ended without a close frame: {other:?}"),
        }
    };
    assert_eq!(close, Some((4009, "slow consumer".to_owned())));
    echo_works(&mut bystander, 1).await;
}

#[tokio::test]
async fn the_idempotency_cache_holds_at_most_its_byte_budget() {
    let server = server(ServerConfig::default().with_idempotency_max_bytes(1 << 20));
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let pad = "k".repeat(60 * 1024);
    for id in 1..=60u64 {
        let key = format!("key-{id}");
        raw.send(&request(id, "echo", json!(pad), Some(&key))).await;
        let reply = crate::reply_to(&mut raw, id).await;
        assert!(matches!(reply, belay_proto::message::Reply::Result(_)));
    }
    let bytes = metric(addr, "belay_idempotency_bytes").await;
    assert!(bytes <= f64::from(1u32 << 20), "{bytes} bytes held");
    assert!(bytes > 512.0 * 1024.0, "the cache is used: {bytes}");
    // The newest keys are still answered from the cache.
    raw.send(&request(100, "echo", json!(pad), Some("key-60")))
        .await;
    assert!(matches!(
        crate::reply_to(&mut raw, 100).await,
        belay_proto::message::Reply::Result(_)
    ));
}

#[tokio::test]
async fn expired_outcomes_are_released_while_nobody_sends_keyed_requests() {
    let retention = Duration::from_millis(300);
    let server = server(ServerConfig::default().with_idempotency_retention(retention));
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let pad = "k".repeat(60 * 1024);
    for id in 1..=5u64 {
        let key = format!("key-{id}");
        raw.send(&request(id, "echo", json!(pad), Some(&key))).await;
        let _ = crate::reply_to(&mut raw, id).await;
    }
    assert!(metric(addr, "belay_idempotency_bytes").await > 5.0 * 60.0 * 1024.0);
    // No keyed request follows: the server's own timer prunes the cache.
    metric_until(addr, "belay_idempotency_keys", |keys| keys == 0.0).await;
    assert_eq!(metric(addr, "belay_idempotency_bytes").await, 0.0);
}
