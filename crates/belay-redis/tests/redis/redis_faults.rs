//! Redis misbehaving, each with a clear outcome for clients and never a
//! panic or a silent gap: a key of the wrong type (another program wrote
//! it) refuses that channel only; errors (out of memory) refuse
//! publications with Redis's error; a silent Redis times publications out
//! and its probe ends subscriptions, which recover when it answers again;
//! connections Redis drops are replaced; a lost history key makes a resume
//! a Resync, never a partial replay.

use crate::common::{config, next, node, publications, resubscribe, subscribe, Raw, RedisServer};
use belay_proto::message::ServerMessage;
use belay_server::broker::PublishError;
use redis::AsyncCommands;
use serde_json::json;

#[tokio::test]
async fn a_key_of_the_wrong_type_refuses_its_channel_only() {
    let redis = RedisServer::start().await;
    let client = redis::Client::open(redis.url()).expect("url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let _: () = conn
        .set("belay.meta.{broken}", "not a hash")
        .await
        .expect("SET");
    let (server, addr) = node(config(&redis)).await;

    let refused = server.publish("broken", json!(1)).await;
    let Err(PublishError::Unavailable(reason)) = refused else {
        panic!("expected Unavailable, got {refused:?}")
    };
    assert!(reason.contains("Redis"), "{reason}");

    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Unsubscribed(no) = subscribe(&mut raw, "broken", None).await else {
        panic!("unsubscribed expected")
    };
    assert_eq!(no.code, "unavailable");

    let ServerMessage::Subscribed(_) = subscribe(&mut raw, "fine", None).await else {
        panic!("another channel is served")
    };
    server
        .publish("fine", json!("ok"))
        .await
        .expect("published");
    assert_eq!(publications(&mut raw, 1).await, vec![(1, json!("ok"))]);
}

async fn commands(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect")
}

#[tokio::test]
async fn redis_answering_errors_refuses_publications_with_its_error() {
    let redis = RedisServer::start().await;
    let (server, _) = node(config(&redis)).await;
    server.publish("news", json!(1)).await.expect("published");
    let mut conn = commands(&redis).await;
    // Every write is refused (OOM) from now on.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query_async(&mut conn)
        .await
        .expect("CONFIG SET");
    let refused = server.publish("news", json!(2)).await;
    let Err(PublishError::Unavailable(reason)) = refused else {
        panic!("expected Unavailable, got {refused:?}")
    };
    assert!(
        reason.contains("OOM") || reason.contains("memory"),
        "{reason}"
    );
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query_async(&mut conn)
        .await
        .expect("CONFIG SET");
    let next = server.publish("news", json!(3)).await.expect("published");
    assert_eq!(next.offset, 2, "the refused publication took no offset");
}

#[tokio::test]
async fn a_silent_redis_times_out_publications_and_ends_subscriptions_then_they_recover() {
    let redis = RedisServer::start().await;
    let (server, addr) = node(config(&redis)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server.publish("news", json!(1)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!(1))]);

    redis.pause();
    // The probe (every 200 ms, answered within 500 ms) notices.
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends")
    };
    assert_eq!(ended.code, "unavailable");
    let refused = server.publish("news", json!(2)).await;
    assert!(
        matches!(&refused, Err(PublishError::Unavailable(r)) if r.contains("timed out")),
        "{refused:?}"
    );
    redis.resume();

    // Its data kept: the old position resumes, nothing is skipped.
    let since = belay_proto::message::StreamPosition {
        epoch: first.epoch.clone(),
        offset: 1,
    };
    let resumed = resubscribe(&mut raw, "news", since).await;
    assert!(resumed.recovered, "Redis kept the history");
    assert_eq!(resumed.epoch, first.epoch);
    server.publish("news", json!(3)).await.expect("published");
    let got = publications(&mut raw, 1).await;
    assert!(
        got == [(2, json!(2))] || got == [(3, json!(3))],
        "the next offset, whichever the timed-out publication left: {got:?}"
    );
}

#[tokio::test]
async fn connections_killed_by_redis_are_replaced_and_subscriptions_end_retryably() {
    let redis = RedisServer::start().await;
    let (server, addr) = node(config(&redis)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    let mut conn = commands(&redis).await;
    // Every client connection of the node, PUB/SUB and commands, dropped.
    for kind in ["pubsub", "normal"] {
        let _: redis::Value = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg(kind)
            .arg("SKIPME")
            .arg("yes")
            .query_async(&mut conn)
            .await
            .expect("CLIENT KILL");
    }
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends")
    };
    assert_eq!(ended.code, "unavailable");
    let since = belay_proto::message::StreamPosition {
        epoch: first.epoch.clone(),
        offset: 0,
    };
    let resumed = resubscribe(&mut raw, "news", since).await;
    assert!(resumed.recovered);
    // The command connection comes back on its own (a publish in the gap
    // may fail `Unavailable`; a later one goes through).
    let mut published = None;
    for _ in 0..50 {
        if let Ok(p) = server.publish("news", json!("back")).await {
            published = Some(p);
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let published = published.expect("publishing works again within 2.5 s");
    assert_eq!(
        publications(&mut raw, 1).await,
        [(published.offset, json!("back"))]
    );
}

#[tokio::test]
async fn a_lost_history_key_makes_a_resume_a_resync_not_a_partial_replay() {
    let redis = RedisServer::start().await;
    let (server, addr) = node(config(&redis)).await;
    for n in 1..=3 {
        server.publish("news", json!(n)).await.expect("published");
    }
    let mut conn = commands(&redis).await;
    let epoch: String = redis::cmd("HGET")
        .arg("belay.meta.{news}")
        .arg("e")
        .query_async(&mut conn)
        .await
        .expect("HGET");
    let _: u64 = redis::cmd("DEL")
        .arg("belay.history.{news}")
        .query_async(&mut conn)
        .await
        .expect("DEL");
    let (mut raw, _) = Raw::connected(addr, None).await;
    let since = belay_proto::message::StreamPosition { epoch, offset: 1 };
    let ServerMessage::Subscribed(granted) = subscribe(&mut raw, "news", Some(since)).await else {
        panic!("subscribed expected")
    };
    assert!(!granted.recovered, "2 and 3 are gone: announced");
    assert_eq!(granted.offset, 3, "granted at the top");
}
