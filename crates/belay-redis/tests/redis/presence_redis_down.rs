//! Presence while Redis cannot answer: a `$presence` query is answered
//! `unavailable` (retryable) within the command timeout, never left
//! hanging, and the connection stays open; once Redis answers again, a
//! member that subscribes again is listed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{config, next, subscribe, Raw, RedisServer};
use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage};
use belay_redis::RedisBroker;
use belay_server::{ChannelOptions, Namespaces, Server, ServerConfig};
use serde_json::{json, Value};
use tokio::net::TcpListener;

fn query(id: u64) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: "$presence".into(),
        params: json!({"channel": "room:1"}),
        idem: None,
        timeout_ms: Some(10_000),
    })
}

/// The answer to request `id`, skipping anything else (subscription ends).
async fn reply(raw: &mut Raw, id: u64) -> Reply {
    loop {
        if let ServerMessage::Response(r) = next(raw).await {
            if r.id == id {
                return r.reply;
            }
        }
    }
}

#[tokio::test]
async fn a_presence_query_is_unavailable_while_redis_is_paused_and_answers_after() {
    let redis = RedisServer::start().await;
    let namespaces =
        Namespaces::new().with("room:*", ChannelOptions::default().with_presence(true));
    let broker = RedisBroker::connect(config(&redis).namespaces(namespaces.clone()))
        .await
        .expect("Redis answers");
    let server = Server::builder()
        .config(ServerConfig::default().with_namespaces(namespaces))
        .broker(Arc::new(broker))
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener, serving.router()).await });

    let (mut raw, _) = Raw::connected(addr, None).await;
    assert!(matches!(
        subscribe(&mut raw, "room:1", None).await,
        ServerMessage::Subscribed(_)
    ));

    redis.pause();
    let asked = Instant::now();
    raw.send(&query(1)).await;
    let Reply::Error(refused) = reply(&mut raw, 1).await else {
        panic!("no members can be read while Redis is paused")
    };
    assert_eq!(refused.code, "unavailable", "{refused:?}");
    // The command timeout (500 ms here), with a generous margin.
    assert!(
        asked.elapsed() < Duration::from_secs(4),
        "{:?}",
        asked.elapsed()
    );

    redis.resume();
    // The subscription ended `unavailable` while Redis was away; subscribe
    // again (as a Belay client does) until the broker is back.
    let mut listed = None;
    for id in 2..100 {
        if let ServerMessage::Subscribed(_) = subscribe(&mut raw, "room:1", None).await {
            raw.send(&query(id)).await;
            if let Reply::Result(members) = reply(&mut raw, id).await {
                let members: Value = members.parse().expect("JSON");
                if members["members"].as_array().is_some_and(|m| m.len() == 1) {
                    listed = Some(members);
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let listed = listed.expect("listed within 10 s of Redis answering again");
    assert_eq!(listed["members"][0]["user"], json!("anonymous"));
}
