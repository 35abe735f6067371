//! Many subscribers of one channel on one node share its PUB/SUB
//! subscription: only the first join asks Redis, the others are answered
//! at once (10,000 clients resubscribing after a node died used to wait
//! for 10,000 round trips, one at a time, past the join's timeout).

use crate::common::{config, node, subscribe, Raw, RedisServer};
use belay_proto::message::ServerMessage;

/// How many SUBSCRIBE commands Redis has served (`INFO commandstats`).
async fn subscribe_calls(redis: &RedisServer) -> u64 {
    let mut conn = redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut conn)
        .await
        .expect("INFO commandstats");
    info.lines()
        .find_map(|line| line.strip_prefix("cmdstat_subscribe:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().expect("a count"))
}

#[tokio::test]
async fn fifty_joins_of_one_channel_ask_redis_once() {
    let redis = RedisServer::start().await;
    let (_server, addr) = node(config(&redis)).await;
    let before = subscribe_calls(&redis).await;
    let mut sessions = Vec::new();
    for _ in 0..50 {
        let (mut raw, _) = Raw::connected(addr, None).await;
        let answer = subscribe(&mut raw, "crowd", None).await;
        assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
        sessions.push(raw);
    }
    assert_eq!(subscribe_calls(&redis).await - before, 1);
}
