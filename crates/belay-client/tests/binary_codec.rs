//! The binary codec end to end (spec/PROTOCOL.md §1.8): a client that asks
//! for it speaks it with a server that negotiates, next to JSON clients on
//! the same channels, and speaks JSON with a server that does not.

mod common;

use belay_client::{Client, Item};
use belay_proto::message::Codec;
use common::scripted;
use common::{builder, demo_server, start, status_where, SOON};
use serde_json::json;

/// The next `n` publications' offsets and data.
async fn publications(feed: &mut belay_client::Subscription, n: usize) -> Vec<(u64, String)> {
    let mut got = Vec::new();
    while got.len() < n {
        match tokio::time::timeout(SOON, feed.next())
            .await
            .expect("in time")
        {
            Some(Item::Publication(p)) => got.push((p.offset, p.data.get().to_owned())),
            other => panic!("{other:?}"),
        }
    }
    got
}

#[tokio::test]
async fn a_binary_client_and_a_json_client_get_the_same_feed_from_one_server() {
    let server = demo_server();
    let addr = start(&server).await;
    let binary = builder(addr)
        .codec(Codec::Binary)
        .connect()
        .expect("a usable URL");
    let json_client = builder(addr).connect().expect("a usable URL");
    let mut binary_feed = binary.subscribe("news").await.expect("subscribed");
    let mut json_feed = json_client.subscribe("news").await.expect("subscribed");
    for client in [&binary, &json_client] {
        tokio::time::timeout(SOON, client.ready())
            .await
            .expect("ready in time")
            .expect("ready");
    }
    assert_eq!(binary.status().borrow().codec, Codec::Binary);
    assert_eq!(json_client.status().borrow().codec, Codec::Json);

    for n in 0..3 {
        server
            .publish("news", json!({"n": n, "text": "ünïcödé"}))
            .await
            .expect("published");
    }
    let over_binary = publications(&mut binary_feed, 3).await;
    let over_json = publications(&mut json_feed, 3).await;
    assert_eq!(over_binary, over_json, "one publication, two encodings");
    assert_eq!(over_binary[2].1, r#"{"n":2,"text":"ünïcödé"}"#);

    let echoed = binary
        .request("echo", json!({"over": "binary", "list": [1, 2, 3]}))
        .await
        .expect("answered");
    assert_eq!(echoed, json!({"over": "binary", "list": [1, 2, 3]}));
    let refused = binary.request("no.such.method", json!(null)).await;
    assert!(
        refused.is_err(),
        "an error response decodes too: {refused:?}"
    );
    binary.close().await;
    json_client.close().await;
}

#[tokio::test]
async fn against_a_server_that_does_not_negotiate_the_binary_client_speaks_json() {
    let (listener, url) = scripted::listen().await;
    let client = Client::builder(url)
        .codec(Codec::Binary)
        .connect()
        .expect("a usable URL");
    // tokio-websockets' server handshake answers without a subprotocol,
    // as a server from before negotiation does.
    let tcp = scripted::accept(&listener).await;
    let mut ws = scripted::establish(tcp).await;
    let mut status = client.status();
    let ready = status_where(&mut status, "ready", |s| s.ready).await;
    assert_eq!(ready.codec, Codec::Json);
    let asked = {
        let client = client.clone();
        tokio::spawn(async move { client.request("echo", json!([1])).await })
    };
    let request = scripted::next_json(&mut ws).await.expect("a JSON request");
    assert_eq!(request["type"], "request");
    let answer = json!({"type": "response", "id": request["id"], "result": [1]});
    scripted::send_text(&mut ws, &answer.to_string()).await;
    assert_eq!(asked.await.expect("task").expect("answered"), json!([1]));
    client.close().await;
}
