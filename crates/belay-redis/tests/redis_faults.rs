//! Redis answering what it should not: a channel's key of the wrong type
//! (another program wrote it) refuses that channel with a clear outcome
//! (`PublishError::Unavailable`, `unsubscribed` `unavailable`), never a
//! panic, and every other channel goes on.

mod common;

use belay_proto::message::ServerMessage;
use belay_server::broker::PublishError;
use common::{config, node, publications, subscribe, Raw, RedisServer};
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
