//! Per-namespace history on Redis (the publish script's length bound): a `chat:*` namespace that
//! keeps 3 publications keeps 3, another channel keeps the broker's
//! default, seen by resuming over a real socket.

use std::time::Duration;

use crate::common::{config, node, Raw, RedisServer};
use belay_proto::message::{ClientMessage, ServerMessage, StreamPosition, Subscribe};
use belay_server::{ChannelOptions, Namespaces};
use serde_json::json;

async fn resume(raw: &mut Raw, channel: &str, epoch: &str, offset: u64) -> (bool, Vec<u64>) {
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
        // The replay is what follows `offset` up to the top, 5.
        while replayed.last() != Some(&5) {
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
async fn on_redis_a_namespace_keeps_its_own_history_size_and_others_the_default() {
    let namespaces =
        Namespaces::new().with("chat:*", ChannelOptions::default().with_history_size(3));
    let redis = RedisServer::start().await;
    let (server, addr) = node(config(&redis).namespaces(namespaces)).await;
    let mut epochs = Vec::new();
    for channel in ["chat:a", "news"] {
        for n in 1..=5 {
            let p = server.publish(channel, json!(n)).await.expect("published");
            epochs.push(p.epoch);
        }
    }
    let (mut raw, _) = Raw::connected(addr, None).await;
    assert_eq!(
        resume(&mut raw, "chat:a", &epochs[0], 2).await,
        (true, vec![3, 4, 5]),
        "chat:a keeps 3..=5"
    );
    let (mut raw, _) = Raw::connected(addr, None).await;
    assert!(
        !resume(&mut raw, "chat:a", &epochs[0], 1).await.0,
        "chat:a no longer holds 2"
    );
    let (mut raw, _) = Raw::connected(addr, None).await;
    assert_eq!(
        resume(&mut raw, "news", &epochs[5], 0).await,
        (true, vec![1, 2, 3, 4, 5]),
        "news keeps the default (1,000)"
    );
}
