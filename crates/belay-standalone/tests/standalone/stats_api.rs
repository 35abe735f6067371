//! `GET /api/stats`: this node's figures: its open connections, their
//! subscriptions and channels, the publications accepted, requests by
//! outcome, uptime and lifecycle (no `cluster` without Redis).

use std::net::SocketAddr;

use crate::common::{api_node as start, subscribed};
use belay_proto::message::{ClientMessage, Request, ServerMessage};
use belay_test_support::sockets::{http_call_with, Raw};
use serde_json::{json, Value};

async fn stats(addr: SocketAddr) -> Value {
    let response = http_call_with(addr, "GET", "/api/stats", &["X-API-Key: k"], None).await;
    assert_eq!(response.status, 200, "{}", response.body);
    serde_json::from_str(&response.body).expect("JSON")
}

#[tokio::test]
async fn stats_counts_connections_subscriptions_publications_and_requests() {
    let (server, addr) = start().await;
    let before = stats(addr).await;
    assert_eq!(before["node"]["connections"], 0);
    assert_eq!(before["node"]["lifecycle"], "serving");
    assert!(before.get("cluster").is_none(), "{before}");

    let (mut alice, _) = Raw::connected(addr, None).await;
    let (mut bob, _) = Raw::connected(addr, None).await;
    subscribed(&mut alice, "a").await;
    subscribed(&mut alice, "b").await;
    subscribed(&mut bob, "a").await;
    for n in 0..3 {
        server.publish("a", json!(n)).await.expect("published");
    }
    bob.send(&ClientMessage::Request(Request {
        id: 1,
        method: "no.such.method".into(),
        params: json!({}),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    while !matches!(
        bob.recv_skipping_pings().await,
        Some(ServerMessage::Response(_)) | None
    ) {}

    let node = stats(addr).await["node"].clone();
    assert_eq!(node["connections"], 2, "{node}");
    assert_eq!(node["connects"], 2);
    assert_eq!(node["subscriptions"], 3);
    assert_eq!(node["active_channels"], 2);
    assert_eq!(node["channels"], 2, "the broker holds a and b");
    assert_eq!(node["publications"], 3);
    let requests: u64 = node["requests"]
        .as_object()
        .expect("requests by outcome")
        .values()
        .filter_map(Value::as_u64)
        .sum();
    assert_eq!(requests, 1, "{node}");
    assert!(node["uptime_ms"].as_u64().is_some());
}
