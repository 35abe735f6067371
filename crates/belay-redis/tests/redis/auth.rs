//! Redis as operators run it: an ACL user limited to Belay's keys and
//! channels, named with its password in the URL; a wrong password is
//! refused at connect with a clear error.

use crate::common::{node, publications, subscribe, Raw, RedisServer};
use belay_proto::message::ServerMessage;
use belay_redis::{ConnectError, RedisBroker, RedisConfig};
use serde_json::json;

/// Add the ACL user `belay` (password `s3cret`), allowed only
/// `belay.*` keys and channels, and turn the default user off.
async fn limited_user(redis: &RedisServer) {
    let mut conn = redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER", "belay", "on", ">s3cret", "~belay.*", "&belay.*", "+@all",
        ])
        .query_async(&mut conn)
        .await
        .expect("ACL SETUSER");
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "default", "off"])
        .query_async(&mut conn)
        .await
        .expect("ACL SETUSER default off");
}

fn with_user(redis: &RedisServer, password: &str) -> RedisConfig {
    let mut config = crate::common::config(redis);
    config.url = format!("redis://belay:{password}@{}", redis.addr());
    config
}

#[tokio::test]
async fn an_acl_user_limited_to_belays_keys_serves_channels() {
    let redis = RedisServer::start().await;
    limited_user(&redis).await;
    let (server, addr) = node(with_user(&redis, "s3cret")).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(_) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server
        .publish("news", json!("hi"))
        .await
        .expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!("hi"))]);
}

#[tokio::test]
async fn a_wrong_password_is_refused_at_connect() {
    let redis = RedisServer::start().await;
    limited_user(&redis).await;
    let refused = RedisBroker::connect(with_user(&redis, "wrong")).await;
    let Err(ConnectError::Unreachable(reason)) = &refused else {
        panic!("refused expected, got {refused:?}")
    };
    assert!(
        !reason.contains("wrong"),
        "the password is not echoed: {reason}"
    );
}
