//! Listing channels on two nodes sharing one real Redis: each node lists
//! the channels its own subscribers are on (its hub), with how many, in
//! name order; a subscriber that leaves is no longer counted. (The union
//! over every node is belay-standalone's `/api/channels`, through the
//! control plane.)

use crate::common::{config, next, node, subscribe, Raw, RedisServer};
use belay_proto::message::{ClientMessage, Request, ServerMessage, Unsubscribe};
use belay_proto::server::ChannelPattern;
use belay_server::broker::{ChannelList, ChannelQuery};
use belay_server::Server;
use serde_json::json;

fn listed(server: &Server, pattern: &str) -> Vec<(String, usize)> {
    let list: ChannelList = server
        .list_channels(&ChannelQuery::new(ChannelPattern::new(pattern)))
        .expect("the Redis broker lists channels");
    list.channels
        .into_iter()
        .map(|c| (c.channel, c.subscribers))
        .collect()
}

fn named(pairs: &[(&str, usize)]) -> Vec<(String, usize)> {
    pairs.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect()
}

async fn joined(raw: &mut Raw, channel: &str) {
    let answer = subscribe(raw, channel, None).await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
}

#[tokio::test]
async fn each_node_lists_its_own_subscribers_channels() {
    let redis = RedisServer::start().await;
    let (a, a_addr) = node(config(&redis)).await;
    let (b, b_addr) = node(config(&redis)).await;
    let (mut alice, _) = Raw::connected(a_addr, None).await;
    let (mut bob, _) = Raw::connected(a_addr, None).await;
    let (mut carol, _) = Raw::connected(b_addr, None).await;
    joined(&mut alice, "chat:2").await;
    joined(&mut alice, "chat:1").await;
    joined(&mut bob, "chat:1").await;
    joined(&mut carol, "chat:1").await;
    joined(&mut carol, "news").await;
    assert_eq!(listed(&a, "chat:*"), named(&[("chat:1", 2), ("chat:2", 1)]));
    assert_eq!(listed(&b, "*"), named(&[("chat:1", 1), ("news", 1)]));
    assert_eq!(listed(&b, "news"), named(&[("news", 1)]));

    bob.send(&ClientMessage::Unsubscribe(Unsubscribe {
        channel: "chat:1".into(),
    }))
    .await;
    // No reply to an unsubscribe: the answer to a request sent after it
    // comes once the connection handled it.
    bob.send(&ClientMessage::Request(Request {
        id: 1,
        method: "echo".into(),
        params: json!("after the unsubscribe"),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    assert!(matches!(next(&mut bob).await, ServerMessage::Response(_)));
    assert_eq!(listed(&a, "chat:*"), named(&[("chat:1", 1), ("chat:2", 1)]));
}
