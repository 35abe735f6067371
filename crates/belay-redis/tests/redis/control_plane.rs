//! Node-to-node messages over Redis: a request to one node gets its
//! answer, a request nobody answers times out, a notice reaches every
//! node, the registry lists live nodes and forgets a killed one, and
//! `/admin/cluster` shows every node's figures.

use std::time::Duration;

use crate::common::{config, Node, Raw, RedisServer, SOON};
use belay_redis::ControlError;
use belay_server::rpc::Methods;
use belay_test_support::sockets::http_call;
use serde_json::{json, Value};
use tokio::sync::mpsc;

const WITHIN: Duration = Duration::from_secs(2);

#[tokio::test]
async fn a_node_answers_a_request_from_another() {
    let redis = RedisServer::start().await;
    let a = Node::start(config(&redis), Methods::new()).await;
    let b = Node::start(config(&redis), Methods::new()).await;
    a.broker
        .control()
        .handle("double", |body: Value| async move {
            body.as_i64()
                .map(|n| json!(n * 2))
                .ok_or_else(|| "not a number".to_string())
        });
    let answer = b
        .broker
        .control()
        .request(a.broker.control().node(), "double", json!(21), WITHIN)
        .await;
    assert_eq!(answer, Ok(json!(42)));
    let refused = b
        .broker
        .control()
        .request(a.broker.control().node(), "double", json!("x"), WITHIN)
        .await;
    assert_eq!(refused, Err(ControlError::Refused("not a number".into())));
    a.kill();
    b.kill();
}

#[tokio::test]
async fn a_method_the_other_node_does_not_have_is_refused_by_name() {
    let redis = RedisServer::start().await;
    let a = Node::start(config(&redis), Methods::new()).await;
    let b = Node::start(config(&redis), Methods::new()).await;
    let answer = b
        .broker
        .control()
        .request(a.broker.control().node(), "nope", Value::Null, WITHIN)
        .await;
    assert!(
        matches!(&answer, Err(ControlError::Refused(reason)) if reason.contains("nope")),
        "{answer:?}"
    );
    a.kill();
    b.kill();
}

#[tokio::test]
async fn a_request_to_a_node_that_is_gone_times_out() {
    let redis = RedisServer::start().await;
    let a = Node::start(config(&redis), Methods::new()).await;
    let b = Node::start(config(&redis), Methods::new()).await;
    let gone = a.broker.control().node().to_owned();
    a.kill();
    let started = tokio::time::Instant::now();
    let answer = b
        .broker
        .control()
        .request(&gone, "node.info", Value::Null, Duration::from_millis(300))
        .await;
    assert_eq!(answer, Err(ControlError::Timeout));
    assert!(started.elapsed() < SOON, "the timeout bounds the wait");
    b.kill();
}

#[tokio::test]
async fn a_notice_reaches_every_node_the_sender_included() {
    let redis = RedisServer::start().await;
    let a = Node::start(config(&redis), Methods::new()).await;
    let b = Node::start(config(&redis), Methods::new()).await;
    let (heard, mut hearing) = mpsc::unbounded_channel();
    for node in [&a, &b] {
        let heard = heard.clone();
        let id = node.broker.control().node().to_owned();
        node.broker.control().handle("hello", move |body| {
            let _ = heard.send((id.clone(), body));
            async { Ok(Value::Null) }
        });
    }
    a.broker
        .control()
        .notify_all("hello", json!("all"))
        .await
        .expect("published");
    let mut got = Vec::new();
    for _ in 0..2 {
        let (node, body) = tokio::time::timeout(SOON, hearing.recv())
            .await
            .expect("in time")
            .expect("open");
        assert_eq!(body, json!("all"));
        got.push(node);
    }
    got.sort();
    let mut nodes = vec![
        a.broker.control().node().to_owned(),
        b.broker.control().node().to_owned(),
    ];
    nodes.sort();
    assert_eq!(got, nodes);
    a.kill();
    b.kill();
}

#[tokio::test]
async fn the_registry_lists_live_nodes_and_forgets_a_killed_one() {
    let redis = RedisServer::start().await;
    let ttl = Duration::from_millis(600);
    let a = Node::start(
        config(&redis).node_id("node-a").node_ttl(ttl),
        Methods::new(),
    )
    .await;
    let b = Node::start(
        config(&redis).node_id("node-b").node_ttl(ttl),
        Methods::new(),
    )
    .await;
    let listed = |want: &'static [&'static str]| {
        let control = b.broker.control().clone();
        async move {
            // Each node's first beat is written at start; expiry takes the TTL.
            let deadline = tokio::time::Instant::now() + SOON;
            loop {
                let alive = control.alive().await.expect("Redis answers");
                if alive == want {
                    return;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{alive:?}, want {want:?}"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    listed(&["node-a", "node-b"]).await;
    a.kill();
    listed(&["node-b"]).await;
    b.broker.control().leave().await.expect("left");
    assert!(b
        .broker
        .control()
        .alive()
        .await
        .expect("answers")
        .is_empty());
    b.kill();
}

#[tokio::test]
async fn the_cluster_route_shows_every_node_and_its_connections() {
    let redis = RedisServer::start().await;
    let a = Node::start(config(&redis).node_id("node-a"), Methods::new()).await;
    let b = Node::start(config(&redis).node_id("node-b"), Methods::new()).await;
    let _one = Raw::connected(b.addr, None).await;
    let response = http_call(a.addr, "GET", "/admin/cluster", None).await;
    assert_eq!(response.status, 200, "{}", response.body);
    let listed: Value = serde_json::from_str(&response.body).expect("JSON");
    let nodes = listed["nodes"].as_array().expect("a list");
    let summary: Vec<(String, i64)> = nodes
        .iter()
        .map(|n| {
            (
                n["node"].as_str().unwrap_or_default().to_owned(),
                n["connections"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [("node-a".to_owned(), 0), ("node-b".to_owned(), 1)]
    );
    assert!(nodes.iter().all(|n| n["lifecycle"] == "serving"));
    a.kill();
    b.kill();
}
