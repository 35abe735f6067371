//! Redis down is a service fault, not a transport fault: subscriptions end
//! with a retryable `unavailable`, the connection and requests that do not
//! need the broker keep working, keyed requests (which need the shared
//! idempotency store) are refused `unavailable`, publishing fails with a typed error; a
//! Redis that comes back empty gives a resuming client `recovered: false`
//! (a Resync, announced), never a silent gap.

use crate::common::{config, next, node, publications, subscribe, Raw, RedisServer};
use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage, StreamPosition};
use belay_server::broker::PublishError;
use serde_json::json;

#[tokio::test]
async fn subscriptions_end_retryably_and_requests_go_on_while_redis_is_down() {
    let mut redis = RedisServer::start().await;
    let (server, addr) = node(config(&redis)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server.publish("news", json!(1)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, vec![(1, json!(1))]);

    redis.kill().await;
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("unsubscribed expected")
    };
    assert_eq!(
        (ended.channel.as_str(), ended.code.as_str()),
        ("news", "unavailable")
    );

    let refused = server.publish("news", json!(2)).await;
    assert!(
        matches!(refused, Err(PublishError::Unavailable(_))),
        "{refused:?}"
    );
    let ServerMessage::Unsubscribed(again) = subscribe(&mut raw, "news", None).await else {
        panic!("a subscribe while Redis is down is refused")
    };
    assert_eq!(again.code, "unavailable");

    raw.send(&ClientMessage::Request(Request {
        id: 1,
        method: "echo".into(),
        params: json!({"still": "here"}),
        idem: None,
        timeout_ms: Some(5_000),
    }))
    .await;
    let ServerMessage::Response(response) = next(&mut raw).await else {
        panic!("echo answered while Redis is down")
    };
    assert!(matches!(response.reply, Reply::Result(_)), "{response:?}");

    // A keyed request needs the shared idempotency store: refused, not run
    // without its guarantee.
    raw.send(&ClientMessage::Request(Request {
        id: 2,
        method: "echo".into(),
        params: json!({"keyed": true}),
        idem: Some("k-1".into()),
        timeout_ms: Some(5_000),
    }))
    .await;
    let ServerMessage::Response(keyed) = next(&mut raw).await else {
        panic!("the keyed request answered while Redis is down")
    };
    let Reply::Error(refusal) = &keyed.reply else {
        panic!("refused while the store is away: {keyed:?}")
    };
    assert_eq!(refusal.code, "unavailable");

    // Back, but empty: the old position cannot be honoured, and says so.
    redis.restart().await;
    let since = StreamPosition {
        epoch: first.epoch.clone(),
        offset: 1,
    };
    // The broker's connections come back within their backoff (at most
    // 2 s); the client retries as a Belay client does after `unavailable`.
    let mut resumed = None;
    for _ in 0..100 {
        match subscribe(&mut raw, "news", Some(since.clone())).await {
            ServerMessage::Subscribed(granted) => {
                resumed = Some(granted);
                break;
            }
            ServerMessage::Unsubscribed(u) if u.code == "unavailable" => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => panic!("{other:?}"),
        }
    }
    let resumed = resumed.expect("subscribed within 10 s of Redis coming back");
    assert!(!resumed.recovered, "Redis lost the history: a Resync");
    assert_ne!(resumed.epoch, first.epoch, "a new epoch");
    server
        .publish("news", json!(3))
        .await
        .expect("published again");
    assert_eq!(publications(&mut raw, 1).await, vec![(1, json!(3))]);
}
