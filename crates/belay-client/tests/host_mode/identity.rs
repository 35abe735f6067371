//! A host acts only as the id its credentials name.

use belay_client::{Client, Item};
use serde_json::json;

use crate::relay::{beat, code, relay};

#[tokio::test]
async fn the_heartbeat_needs_a_host_token() {
    let (_server, _url, base) = relay().await;
    assert_eq!(beat(&base, "bad").await.0, 401);
    let (status, body) = beat(&base, "alice").await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("forbidden"));
}

#[tokio::test]
async fn a_host_cannot_hold_another_hosts_calls_and_a_client_cannot_publish_as_a_host() {
    let (_server, url, _base) = relay().await;
    let impostor = Client::builder(url.clone())
        .token("host:pc-1")
        .connect()
        .expect("a usable URL");
    impostor.ready().await.expect("ready");
    let mut calls = impostor.subscribe("$host-calls:pc-2").await.expect("sent");
    let refused = calls.next().await;
    assert!(
        matches!(&refused, Some(Item::Refused { code }) if code == "forbidden"),
        "{refused:?}"
    );
    let own = impostor.publish("$host:pc-2", json!(1)).await;
    assert_eq!(code(&own), "forbidden");
    let answer = impostor
        .request("$answer", json!({"call": 1, "result": 1}))
        .await;
    assert_eq!(code(&answer), "not_found", "no such call for this host");

    let client = Client::builder(url).connect().expect("a usable URL");
    client.ready().await.expect("ready");
    let state = client
        .publish("$host-state:pc-1", json!({"state": "ready"}))
        .await;
    assert_eq!(code(&state), "forbidden");
    let answer = client
        .request("$answer", json!({"call": 1, "result": 1}))
        .await;
    assert_eq!(code(&answer), "forbidden");
    impostor.close().await;
    client.close().await;
}
