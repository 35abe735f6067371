//! `GET /api/stats` in a Redis cluster: this node's figures with its id,
//! and every live node's (this one's too) under `cluster.nodes`; a live
//! node that cannot answer (here one that serves no API) is named in
//! `cluster.unanswered`.

use crate::cluster::{broker, node, until_alive};
use belay_test_support::services::RedisServer;
use belay_test_support::sockets::{http_call_with, Raw};
use serde_json::Value;

#[tokio::test]
async fn one_node_gives_every_nodes_figures_and_names_the_silent_one() {
    let redis = RedisServer::start().await;
    let a_broker = broker(&redis, "a").await;
    let a = node(a_broker.clone()).await;
    let b = node(broker(&redis, "b").await).await;
    let _mute = broker(&redis, "mute").await;
    until_alive(&a_broker, 3).await;
    let _alice = Raw::connected(a, None).await;
    let _bob = Raw::connected(b, None).await;
    let _carol = Raw::connected(b, None).await;

    let response = http_call_with(a, "GET", "/api/stats", &["X-API-Key: k"], None).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let stats: Value = serde_json::from_str(&response.body).expect("JSON");
    assert_eq!(
        (&stats["node"]["node"], &stats["node"]["connections"]),
        (&Value::from("a"), &Value::from(1))
    );
    let mut nodes: Vec<(String, u64)> = stats["cluster"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            let id = n["node"].as_str().expect("an id").to_owned();
            (id, n["connections"].as_u64().expect("connections"))
        })
        .collect();
    nodes.sort();
    assert_eq!(nodes, [("a".to_owned(), 1), ("b".to_owned(), 2)]);
    let unanswered = stats["cluster"]["unanswered"]
        .as_array()
        .expect("unanswered");
    assert_eq!(unanswered.len(), 1, "{stats}");
    assert_eq!(unanswered[0]["node"], "mute");
}
