//! Channels whose names start with `$` are the server's own
//! (`$presence:…`, `$host-calls:…`, `$host-state:…`, `$host:…`): the HTTP
//! API refuses to write them, 403 `reserved_channel`, publishing nothing,
//! so a backend bug cannot forge host calls, host states or presence; and a
//! client's `$publish` to one is `forbidden` whatever its grant (only a
//! host publishes, to its own `$host:ID`).

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use belay_proto::message::{Reply, ServerMessage};
use belay_server::Namespaces;
use belay_standalone::JwtAuthenticator;
use belay_test_support::sockets::{http_call_with, Raw};
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};

use crate::common::{api_node, next, node, request};

const AUTH: &str = "Authorization: Bearer k";
const SECRET: &[u8] = b"a-test-secret-of-some-length";
const RESERVED: [&str; 5] = [
    "$host-calls:pc-1",
    "$host-state:pc-1",
    "$presence:room",
    "$host:pc-1",
    "$anything",
];

async fn post(addr: SocketAddr, path: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let response = http_call_with(addr, "POST", path, &[AUTH], Some(&body)).await;
    let value = serde_json::from_str(&response.body).expect("JSON");
    (response.status, value)
}

/// The channel's top offset, as the history API reads it.
async fn top(addr: SocketAddr, channel: &str) -> Option<u64> {
    let (status, page) = post(addr, "/api/history", &json!({"channel": channel})).await;
    assert_eq!(status, 200, "{page}");
    page["offset"].as_u64()
}

#[tokio::test]
async fn the_api_refuses_to_publish_on_a_servers_channel() {
    let (_server, addr) = api_node().await;
    for channel in RESERVED {
        let (status, answer) = post(
            addr,
            "/api/publish",
            &json!({"channel": channel, "data": {"call": 1, "method": "wipe"}}),
        )
        .await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (403, Some("reserved_channel")),
            "{channel}: {answer}"
        );
        assert_eq!(top(addr, channel).await, Some(0), "{channel}");
    }
}

#[tokio::test]
async fn a_broadcast_naming_a_servers_channel_publishes_nothing() {
    let (_server, addr) = api_node().await;
    let (status, answer) = post(
        addr,
        "/api/broadcast",
        &json!({"channels": ["news", "$presence:room"], "data": {"join": {}}}),
    )
    .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (403, Some("reserved_channel")),
        "{answer}"
    );
    assert_eq!(top(addr, "news").await, Some(0));
    assert_eq!(top(addr, "$presence:room").await, Some(0));
}

#[tokio::test]
async fn a_client_with_a_wildcard_grant_may_not_publish_on_a_servers_channel() {
    let addr = node(
        JwtAuthenticator::hs256(SECRET).expect("key"),
        Namespaces::new(),
    )
    .await;
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 600;
    let token = encode(
        &Header::default(),
        &json!({"sub": "mallory", "exp": exp, "publish": ["*"]}),
        &EncodingKey::from_secret(SECRET).expect("key"),
    )
    .expect("token");
    let (mut raw, _) = Raw::connected(addr, Some(&token)).await;
    for (id, channel) in (1..).zip(RESERVED) {
        raw.send(&request(
            id,
            "$publish",
            json!({"channel": channel, "data": 1}),
        ))
        .await;
        let ServerMessage::Response(response) = next(&mut raw).await else {
            panic!("a response")
        };
        let Reply::Error(error) = response.reply else {
            panic!("{channel}: published: {:?}", response.reply)
        };
        assert_eq!(error.code, "forbidden", "{channel}");
    }
}
