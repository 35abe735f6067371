//! A Redis Cluster (three primaries, each with a replica, made by
//! `redis-cli --cluster create`): channels spread over its shards, live
//! delivery over sharded PUB/SUB, presence and the control plane across
//! shards, a channel's slot moved under publishing (its clients resume
//! with nothing lost and the epoch kept), and a primary killed (its
//! replica promoted; what it may have lacked is announced, as with
//! Sentinel; with `wait_replicas`, nothing is lost and positions resume).

use std::time::Duration;

use crate::common::{
    next, node, publications, publish_once_available, resubscribe, subscribe, three_delivered,
    Node, Raw,
};
use belay_proto::message::{ServerMessage, StreamPosition};
use belay_redis::RedisConfig;
use belay_server::broker::{Member, PublishError};
use belay_server::rpc::Methods;
use belay_test_support::services::RedisCluster;
use serde_json::json;

fn cluster_config(cluster: &RedisCluster) -> RedisConfig {
    RedisConfig::default()
        .cluster(cluster.urls())
        .command_timeout(Duration::from_millis(500))
        .probe_every(Duration::from_millis(200))
}

#[tokio::test]
async fn channels_spread_over_every_shard_and_reach_subscribers_on_another_node() {
    let cluster = RedisCluster::start(3, 1).await;
    let (publisher, _) = node(cluster_config(&cluster)).await;
    let (_subscriber, addr) = node(cluster_config(&cluster)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let channels: Vec<String> = (0..12).map(|n| format!("room:{n}")).collect();
    for channel in &channels {
        let ServerMessage::Subscribed(granted) = subscribe(&mut raw, channel, None).await else {
            panic!("subscribed to {channel}")
        };
        assert_eq!(granted.offset, 0);
    }
    for (n, channel) in channels.iter().enumerate() {
        let published = publisher
            .publish(channel, json!(n))
            .await
            .expect("published");
        assert_eq!(published.offset, 1);
    }
    let mut seen = Vec::new();
    while seen.len() < channels.len() {
        match next(&mut raw).await {
            ServerMessage::Publication(p) => seen.push(p.channel),
            other => panic!("expected a publication, got {other:?}"),
        }
    }
    seen.sort();
    let mut expected = channels.clone();
    expected.sort();
    assert_eq!(seen, expected, "each channel's publication, once");

    let mut shards_used = std::collections::HashSet::new();
    for channel in &channels {
        let slot = cluster.slot_of(&format!("belay.meta.{{{channel}}}")).await;
        shards_used.insert(cluster.primary_of(slot).await);
    }
    assert_eq!(
        shards_used.len(),
        3,
        "twelve channels land on all three shards"
    );
}

#[tokio::test]
async fn presence_and_the_control_plane_work_across_shards() {
    let cluster = RedisCluster::start(3, 1).await;
    let a = Node::start(cluster_config(&cluster), Methods::new()).await;
    let b = Node::start(cluster_config(&cluster), Methods::new()).await;
    a.broker
        .control()
        .handle("double", |body: serde_json::Value| async move {
            body.as_i64()
                .map(|n| json!(n * 2))
                .ok_or_else(|| "not a number".to_string())
        });
    let answer = b
        .broker
        .control()
        .request(
            a.broker.control().node(),
            "double",
            json!(21),
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(answer, Ok(json!(42)), "a request crosses the cluster");

    let presence_a = belay_server::broker::Broker::presence(&a.broker).expect("presence");
    let presence_b = belay_server::broker::Broker::presence(&b.broker).expect("presence");
    for n in 0..6 {
        let room = format!("room:{n}");
        presence_a
            .add(&room, "k1", Member::new("c1", "alice", None))
            .await
            .expect("added");
        let members = presence_b.members(&room).await.expect("read");
        assert_eq!(members.len(), 1, "{room}: a member added on A is seen on B");
        assert_eq!(members[0].user, "alice");
    }
    a.kill();
    b.kill();
}

#[tokio::test]
async fn a_channel_moved_to_another_shard_under_publishing_loses_nothing() {
    let cluster = RedisCluster::start(3, 0).await;
    let (publisher, _) = node(cluster_config(&cluster)).await;
    let (_subscriber, addr) = node(cluster_config(&cluster)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    let slot = cluster.slot_of("belay.meta.{news}").await;
    let from = cluster.primary_of(slot).await;
    let to = (from + 1) % 3;

    // Publications keep going while the slot moves; each is acknowledged
    // (redirected by MOVED/ASK) or refused `unavailable`, never wrong.
    let publishing = tokio::spawn({
        let publisher = publisher.clone();
        async move {
            let mut acknowledged = Vec::new();
            for n in 0..300 {
                match publisher.publish("news", json!(n)).await {
                    Ok(p) => acknowledged.push(p.offset),
                    Err(PublishError::Unavailable(_)) => {}
                    Err(other) => panic!("{other:?}"),
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            acknowledged
        }
    });
    cluster.move_slot(slot, to).await;
    assert_eq!(cluster.primary_of(slot).await, to, "the slot moved");
    let acknowledged = publishing.await.expect("the publisher ran");
    let last = *acknowledged.last().expect("publications were acknowledged");
    assert!(
        acknowledged.len() >= 250,
        "few refusals: {}",
        acknowledged.len()
    );

    // The client follows: offsets in order, no gap; a subscription ended
    // by the move resumes from its position with nothing lost.
    let mut position = StreamPosition {
        epoch: first.epoch.clone(),
        offset: 0,
    };
    while position.offset < last {
        match next(&mut raw).await {
            ServerMessage::Publication(p) => {
                assert_eq!(p.offset, position.offset + 1, "in order, no gap");
                position.offset = p.offset;
            }
            ServerMessage::Unsubscribed(ended) => {
                assert_eq!(ended.code, "unavailable", "{ended:?}");
                let resumed = resubscribe(&mut raw, "news", position.clone()).await;
                assert!(resumed.recovered, "the moved history is whole");
                assert_eq!(resumed.epoch, first.epoch, "the epoch is kept");
            }
            other => panic!("{other:?}"),
        }
    }
    let after = publisher
        .publish("news", json!("after"))
        .await
        .expect("published");
    assert_eq!(
        after.epoch, first.epoch,
        "the new shard keeps the channel's epoch"
    );
    assert_eq!(
        publications(&mut raw, 1).await,
        [(last + 1, json!("after"))]
    );
}

#[tokio::test]
async fn a_killed_primary_is_followed_and_what_it_may_have_lacked_is_announced() {
    let mut cluster = RedisCluster::start(3, 1).await;
    let (server, addr) = node(cluster_config(&cluster)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server.publish("news", json!(1)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!(1))]);

    let primary = cluster
        .primary_of(cluster.slot_of("belay.meta.{news}").await)
        .await;
    let took = cluster.kill_primary(primary).await;
    assert!(took < Duration::from_secs(30), "{took:?}");
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends when its shard's primary is lost")
    };
    assert_eq!(ended.code, "unavailable", "retryable: {ended:?}");

    let offset = publish_once_available(&server, "news", json!("after")).await;
    let resumed = resubscribe(
        &mut raw,
        "news",
        StreamPosition {
            epoch: first.epoch.clone(),
            offset: 1,
        },
    )
    .await;
    assert!(
        !resumed.recovered,
        "the promoted replica may lack what the old primary acknowledged: resync"
    );
    assert_ne!(resumed.epoch, first.epoch, "a new epoch on the new primary");
    assert_eq!(resumed.offset, offset);
    let next_offset = publish_once_available(&server, "news", json!("live")).await;
    assert_eq!(
        publications(&mut raw, 1).await,
        [(next_offset, json!("live"))],
        "live again on the promoted replica, same connection"
    );
}

#[tokio::test]
async fn with_wait_replicas_a_killed_primary_loses_nothing_and_positions_resume() {
    let mut cluster = RedisCluster::start(3, 1).await;
    let config = cluster_config(&cluster).wait_replicas(1, Duration::from_millis(500));
    let (server, addr) = node(config).await;
    let (mut raw, first) = three_delivered(&server, addr).await;
    let killed = cluster
        .primary_of(cluster.slot_of("belay.meta.{news}").await)
        .await;
    cluster.kill_primary(killed).await;
    // The subscription ends with the node's lost connection; resuming
    // before that would cross its end.
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends when its shard's primary is lost")
    };
    assert_eq!(ended.code, "unavailable", "retryable: {ended:?}");
    let resumed = resubscribe(
        &mut raw,
        "news",
        StreamPosition {
            epoch: first.epoch.clone(),
            offset: 3,
        },
    )
    .await;
    assert!(
        resumed.recovered,
        "every confirmed publication is on the promoted replica"
    );
    assert_eq!(resumed.epoch, first.epoch, "the epoch is kept");
    // The promoted replica has no replica of its own: a publication on its
    // shard cannot be confirmed, and is refused, never acknowledged.
    let refused = server.publish("news", json!(4)).await;
    assert!(
        matches!(&refused, Err(PublishError::Unavailable(_))),
        "{refused:?}"
    );
    // A channel of another shard, whose primary keeps its replica, is
    // confirmed as before.
    let mut other = None;
    for n in 0..64 {
        let channel = format!("other:{n}");
        let slot = cluster.slot_of(&format!("belay.meta.{{{channel}}}")).await;
        let primary = cluster.primary_of(slot).await;
        if primary < 3 && primary != killed {
            other = Some(channel);
            break;
        }
    }
    let other = other.expect("a channel on a shard that kept its replica");
    server
        .publish(&other, json!("confirmed"))
        .await
        .expect("confirmed by that shard's replica");
}

#[tokio::test]
async fn a_cluster_found_through_sentinels_is_refused_by_name() {
    let config = RedisConfig::default()
        .cluster(["redis://127.0.0.1:1"])
        .sentinel("main", ["redis://127.0.0.1:2"]);
    let refused = belay_redis::RedisBroker::connect(config).await;
    assert!(
        matches!(refused, Err(belay_redis::ConnectError::Unsupported(ref why)) if why.contains("Sentinels")),
        "{:?}",
        refused.err()
    );
}
