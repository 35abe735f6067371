//! On Redis too, a channel's history is bounded in bytes
//! (`history_max_bytes`, in the publish script): the oldest publications
//! go first, and a resume past them gets `recovered: false`.

use std::time::Duration;

use crate::common::{config, node, Raw, RedisServer};
use belay_proto::message::{ClientMessage, ServerMessage, StreamPosition, Subscribe};
use serde_json::json;

/// Subscribe to `channel` from `offset` of `epoch`: whether it recovered,
/// and the offsets replayed (up to `top`).
async fn resume(
    raw: &mut Raw,
    channel: &str,
    epoch: &str,
    offset: u64,
    top: u64,
) -> (bool, Vec<u64>) {
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: Some(StreamPosition {
            epoch: epoch.into(),
            offset,
        }),
        token: None,
    }))
    .await;
    let ServerMessage::Subscribed(sub) = next(raw).await else {
        panic!("subscribed expected")
    };
    let mut replayed = Vec::new();
    if sub.recovered {
        while replayed.last().copied().unwrap_or(offset) < top {
            match next(raw).await {
                ServerMessage::Publication(p) => replayed.push(p.offset),
                other => panic!("expected a publication, got {other:?}"),
            }
        }
    }
    (sub.recovered, replayed)
}

/// The next message that is not a ping, within a bound.
async fn next(raw: &mut Raw) -> ServerMessage {
    tokio::time::timeout(Duration::from_secs(5), raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("the connection stays open")
}

#[tokio::test]
async fn on_redis_a_channel_keeps_at_most_its_bytes_and_a_resume_past_them_is_not_recovered() {
    let redis = RedisServer::start().await;
    let (server, addr) = node(config(&redis).history_max_bytes(100_000)).await;
    let mut epoch = String::new();
    for n in 1..=10 {
        let data = json!({ "n": n, "pad": "x".repeat(30_000) });
        epoch = server.publish("big", data).await.expect("published").epoch;
    }
    let (mut raw, _) = Raw::connected(addr, None).await;
    // 10 × 30 KB were published; three fit in 100 KB.
    assert_eq!(
        resume(&mut raw, "big", &epoch, 0, 10).await,
        (false, vec![])
    );
    let (mut raw, _) = Raw::connected(addr, None).await;
    assert_eq!(
        resume(&mut raw, "big", &epoch, 7, 10).await,
        (true, vec![8, 9, 10])
    );
}
