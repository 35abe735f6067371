//! The position check: a publication whose PUB/SUB message was lost, with
//! none after it, still reaches subscribers from the history, in order;
//! one the history does not hold, or a channel Redis lost, ends the
//! subscription with `unavailable` instead of leaving a silent gap.

use std::time::Duration;

use crate::common::{config, next, node, publications, subscribe, Raw, RedisServer};
use belay_proto::message::{ServerMessage, StreamPosition};
use serde_json::json;

/// Redis commands the test runs itself: a publication appended without
/// its PUB/SUB message, as if that message had been lost.
async fn redis_conn(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

async fn append_without_publishing(
    conn: &mut redis::aio::MultiplexedConnection,
    channel: &str,
    data: &str,
    keep_in_history: bool,
) -> u64 {
    let offset: u64 = redis::cmd("HINCRBY")
        .arg(format!("belay.meta.{{{channel}}}"))
        .arg("s")
        .arg(1)
        .query_async(conn)
        .await
        .expect("HINCRBY");
    if keep_in_history {
        let _: String = redis::cmd("XADD")
            .arg(format!("belay.history.{{{channel}}}"))
            .arg(format!("{offset}-0"))
            .arg("d")
            .arg(data)
            .arg("t")
            .arg(1)
            .query_async(conn)
            .await
            .expect("XADD");
    }
    offset
}

fn checked(redis: &RedisServer) -> belay_redis::RedisConfig {
    config(redis).position_check_every(Duration::from_millis(100))
}

#[tokio::test]
async fn a_publication_lost_on_pubsub_with_none_after_it_arrives_from_the_history() {
    let redis = RedisServer::start().await;
    let (server, addr) = node(checked(&redis)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(_) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server.publish("news", json!(1)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!(1))]);
    let mut conn = redis_conn(&redis).await;
    let lost = append_without_publishing(&mut conn, "news", "\"lost\"", true).await;
    assert_eq!(lost, 2);
    // No later publication shows the gap: the check finds it.
    assert_eq!(publications(&mut raw, 1).await, [(2, json!("lost"))]);
    server.publish("news", json!(3)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(3, json!(3))]);
}

#[tokio::test]
async fn a_lost_publication_the_history_does_not_hold_ends_the_subscription() {
    let redis = RedisServer::start().await;
    let (server, addr) = node(checked(&redis)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(_) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server.publish("news", json!(1)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!(1))]);
    let mut conn = redis_conn(&redis).await;
    append_without_publishing(&mut conn, "news", "\"gone\"", false).await;
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends")
    };
    assert_eq!(
        (ended.channel.as_str(), ended.code.as_str()),
        ("news", "unavailable")
    );
}

#[tokio::test]
async fn a_channel_redis_lost_ends_the_subscription_and_resuming_is_a_resync() {
    let redis = RedisServer::start().await;
    let (server, addr) = node(checked(&redis)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server.publish("news", json!(1)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!(1))]);
    let mut conn = redis_conn(&redis).await;
    let _: u64 = redis::cmd("DEL")
        .arg("belay.meta.{news}")
        .arg("belay.history.{news}")
        .query_async(&mut conn)
        .await
        .expect("DEL");
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends")
    };
    assert_eq!(ended.code, "unavailable");
    let since = StreamPosition {
        epoch: first.epoch.clone(),
        offset: 1,
    };
    let ServerMessage::Subscribed(again) = subscribe(&mut raw, "news", Some(since)).await else {
        panic!("subscribed again")
    };
    assert!(!again.recovered, "announced as a Resync");
    assert_ne!(again.epoch, first.epoch);
}
