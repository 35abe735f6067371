//! `GET /api/channels`: the channels with subscribers on this node, in
//! name order, with how many each (`?pattern=chat:*` narrows, `after`
//! pages on); a channel whose subscribers left, or that only has history,
//! is not listed; a bad pattern or an unknown parameter is 400 naming it.

use std::net::SocketAddr;

use crate::common::{api_node as start, subscribed};
use belay_proto::message::{ClientMessage, Request, ServerMessage, Unsubscribe};
use belay_test_support::sockets::{http_call_with, Raw};
use serde_json::{json, Value};

const AUTH: &str = "Authorization: Bearer k";

async fn channels(addr: SocketAddr, query: &str) -> (u16, Value) {
    let path = format!("/api/channels{query}");
    let response = http_call_with(addr, "GET", &path, &[AUTH], None).await;
    let value = serde_json::from_str(&response.body).expect("JSON");
    (response.status, value)
}

#[tokio::test]
async fn channels_lists_subscribed_channels_with_their_counts() {
    let (server, addr) = start().await;
    let (mut alice, _) = Raw::connected(addr, None).await;
    let (mut bob, _) = Raw::connected(addr, None).await;
    for channel in ["chat:2", "chat:1", "news"] {
        subscribed(&mut alice, channel).await;
    }
    subscribed(&mut bob, "chat:1").await;
    server
        .publish("history-only", json!(1))
        .await
        .expect("published");

    let (status, all) = channels(addr, "").await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(
        all,
        json!({"channels": [
            {"channel": "chat:1", "subscribers": 2},
            {"channel": "chat:2", "subscribers": 1},
            {"channel": "news", "subscribers": 1},
        ], "truncated": false})
    );
    let (_, chat) = channels(addr, "?pattern=chat:*").await;
    assert_eq!(chat["channels"].as_array().map(Vec::len), Some(2));
    let (_, exact) = channels(addr, "?pattern=news").await;
    assert_eq!(
        exact["channels"],
        json!([{"channel": "news", "subscribers": 1}])
    );
    let (_, next) = channels(addr, "?pattern=*&after=chat:1").await;
    assert_eq!(next["channels"][0]["channel"], "chat:2");

    alice
        .send(&ClientMessage::Unsubscribe(Unsubscribe {
            channel: "news".into(),
        }))
        .await;
    // No reply to an unsubscribe; the answer to a request sent after it
    // comes once the connection has handled it (in order).
    alice
        .send(&ClientMessage::Request(Request {
            id: 1,
            method: "no.such.method".into(),
            params: json!({}),
            idem: None,
            timeout_ms: None,
        }))
        .await;
    let answer = alice.recv_skipping_pings().await;
    assert!(
        matches!(answer, Some(ServerMessage::Response(_))),
        "{answer:?}"
    );
    let (_, left) = channels(addr, "?pattern=news").await;
    assert_eq!(left["channels"], json!([]));

    for (query, named) in [
        ("?pattern=", "pattern"),
        ("?pattern=a%20b", "pattern"),
        ("?after=", "after"),
        ("?patern=chat:*", "patern"),
        ("?pattern=a&pattern=b", "pattern"),
    ] {
        let (status, answer) = channels(addr, query).await;
        assert_eq!(status, 400, "{query}: {answer}");
        assert_eq!(answer["error"]["code"], "bad_request");
        let message = answer["error"]["message"].as_str().expect("a message");
        assert!(message.contains(named), "{query}: {message}");
    }
}
