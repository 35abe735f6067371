//! `GET /api/channels` in a Redis cluster: the call to one node lists the
//! channels of every node's subscribers, counts summed, in name order;
//! a live node that cannot answer (here one that serves no API) is named
//! in `unanswered`, and the others' channels are still listed.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cluster::{broker, node, until_alive};
use belay_proto::message::{ClientMessage, ServerMessage, Subscribe};
use belay_test_support::services::RedisServer;
use belay_test_support::sockets::{http_call_with, Raw};
use serde_json::{json, Value};

const SOON: Duration = Duration::from_secs(5);

async fn subscribe(raw: &mut Raw, channel: &str) {
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    }))
    .await;
    let answer = tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("in time");
    assert!(
        matches!(answer, Some(ServerMessage::Subscribed(_))),
        "{answer:?}"
    );
}

async fn channels(addr: SocketAddr, query: &str) -> Value {
    let path = format!("/api/channels{query}");
    let response = http_call_with(addr, "GET", &path, &["X-API-Key: k"], None).await;
    assert_eq!(response.status, 200, "{}", response.body);
    serde_json::from_str(&response.body).expect("JSON")
}

#[tokio::test]
async fn one_node_lists_every_nodes_channels_and_names_the_silent_one() {
    let redis = RedisServer::start().await;
    let a_broker = broker(&redis, "a").await;
    let a = node(a_broker.clone()).await;
    let b = node(broker(&redis, "b").await).await;
    let _mute = broker(&redis, "mute").await;
    until_alive(&a_broker, 3).await;

    let (mut alice, _) = Raw::connected(a, None).await;
    let (mut bob, _) = Raw::connected(b, None).await;
    subscribe(&mut alice, "chat:1").await;
    subscribe(&mut alice, "chat:2").await;
    subscribe(&mut bob, "chat:1").await;
    subscribe(&mut bob, "news").await;

    let all = channels(a, "").await;
    assert_eq!(
        all["channels"],
        json!([
            {"channel": "chat:1", "subscribers": 2},
            {"channel": "chat:2", "subscribers": 1},
            {"channel": "news", "subscribers": 1},
        ])
    );
    assert_eq!(all["truncated"], false);
    let unanswered = all["unanswered"].as_array().expect("unanswered");
    assert_eq!(unanswered.len(), 1, "{all}");
    assert_eq!(unanswered[0]["node"], "mute");
    assert!(unanswered[0]["error"]
        .as_str()
        .is_some_and(|e| !e.is_empty()));

    let chat = channels(b, "?pattern=chat:*&after=chat:1").await;
    assert_eq!(
        chat["channels"],
        json!([{"channel": "chat:2", "subscribers": 1}])
    );
}
