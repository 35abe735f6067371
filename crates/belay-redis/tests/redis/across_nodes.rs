//! Two nodes on one Redis serve the same channels: one offset sequence,
//! live fan-out across nodes, and a resume on another node that replays
//! exactly what was missed.

use crate::common::{config, node, publications, subscribe, Raw, RedisServer};
use belay_proto::message::{ServerMessage, StreamPosition};
use serde_json::json;

#[tokio::test]
async fn a_publication_on_one_node_reaches_a_subscriber_on_the_other_in_order() {
    let redis = RedisServer::start().await;
    let (a, _) = node(config(&redis)).await;
    let (_b, b_addr) = node(config(&redis)).await;
    let (mut raw, _) = Raw::connected(b_addr, None).await;
    let ServerMessage::Subscribed(sub) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    assert_eq!(sub.offset, 0);
    for n in 1..=5 {
        a.publish("news", json!(n)).await.expect("published");
    }
    let got = publications(&mut raw, 5).await;
    assert_eq!(
        got,
        (1..=5).map(|n| (n, json!(n))).collect::<Vec<_>>(),
        "offsets 1..=5 in order"
    );
}

#[tokio::test]
async fn both_nodes_publish_into_one_offset_sequence() {
    let redis = RedisServer::start().await;
    let (a, _) = node(config(&redis)).await;
    let (b, _) = node(config(&redis)).await;
    let mut offsets = Vec::new();
    for n in 0..6 {
        let node = if n % 2 == 0 { &a } else { &b };
        let publication = node.publish("shared", json!(n)).await.expect("published");
        offsets.push(publication.offset);
    }
    assert_eq!(offsets, [1, 2, 3, 4, 5, 6]);
}

#[tokio::test]
async fn a_client_resumes_on_the_other_node_with_exactly_what_it_missed() {
    let redis = RedisServer::start().await;
    let (a, a_addr) = node(config(&redis)).await;
    let (_b, b_addr) = node(config(&redis)).await;
    let (mut on_a, _) = Raw::connected(a_addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut on_a, "orders", None).await else {
        panic!("subscribed expected")
    };
    for n in 1..=3 {
        a.publish("orders", json!(n)).await.expect("published");
    }
    assert_eq!(
        publications(&mut on_a, 3).await.last().map(|p| p.0),
        Some(3)
    );
    drop(on_a);
    for n in 4..=6 {
        a.publish("orders", json!(n)).await.expect("published");
    }
    let (mut on_b, _) = Raw::connected(b_addr, None).await;
    let since = StreamPosition {
        epoch: first.epoch.clone(),
        offset: 3,
    };
    let ServerMessage::Subscribed(resumed) = subscribe(&mut on_b, "orders", Some(since)).await
    else {
        panic!("subscribed expected")
    };
    assert!(resumed.recovered, "the history on Redis covers 4..=6");
    assert_eq!(
        (resumed.epoch.as_str(), resumed.offset),
        (first.epoch.as_str(), 3)
    );
    assert_eq!(
        publications(&mut on_b, 3).await,
        vec![(4, json!(4)), (5, json!(5)), (6, json!(6))]
    );
    a.publish("orders", json!(7)).await.expect("published");
    assert_eq!(
        publications(&mut on_b, 1).await,
        vec![(7, json!(7))],
        "then live"
    );
}
