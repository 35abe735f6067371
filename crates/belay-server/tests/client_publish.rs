//! `$publish` over a real socket: an allowed client publish reaches another
//! subscriber with its offset; without the grant it is `forbidden`; a retry
//! with the same idempotency key publishes once; an oversize one is refused
//! and publishes nothing.

mod common;

use std::time::Duration;

use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage, Subscribe};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{Server, ServerConfig};
use common::{start, Raw};
use serde_json::{json, Value};

/// Token `pub` may publish to `chat:*`; anyone else may not publish.
struct Grants;

impl Authenticator for Grants {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        Ok(match token {
            Some("pub") => Principal::user("alice").publishing_to(vec!["chat:*".to_string()]),
            _ => Principal::user("bob"),
        })
    }
}

/// Publications over this many bytes are refused (requests up to the
/// default frame limit are read).
const MAX_PUBLICATION: usize = 1_024;

async fn server() -> (Server, std::net::SocketAddr) {
    let server = Server::builder()
        .config(ServerConfig::default().with_max_publication_len(MAX_PUBLICATION))
        .authenticator(Grants)
        .build();
    let addr = start(&server).await;
    (server, addr)
}

async fn next(raw: &mut Raw) -> ServerMessage {
    tokio::time::timeout(Duration::from_secs(5), raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("the connection stays open")
}

async fn publish(raw: &mut Raw, id: u64, channel: &str, data: Value, idem: Option<&str>) -> Reply {
    raw.send(&ClientMessage::Request(Request {
        id,
        method: "$publish".into(),
        params: json!({"channel": channel, "data": data}),
        idem: idem.map(str::to_owned),
        timeout_ms: None,
    }))
    .await;
    loop {
        if let ServerMessage::Response(r) = next(raw).await {
            assert_eq!(r.id, id);
            return r.reply;
        }
    }
}

async fn subscriber(addr: std::net::SocketAddr, channel: &str) -> Raw {
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    }))
    .await;
    assert!(matches!(next(&mut raw).await, ServerMessage::Subscribed(_)));
    raw
}

fn error_code(reply: &Reply) -> &str {
    match reply {
        Reply::Error(e) => &e.code,
        Reply::Result(r) => panic!("expected an error, got {r:?}"),
    }
}

#[tokio::test]
async fn an_allowed_publish_reaches_another_subscriber_with_its_offset() {
    let (_server, addr) = server().await;
    let mut sub = subscriber(addr, "chat:a").await;
    let (mut client, _) = Raw::connected(addr, Some("pub")).await;
    let reply = publish(&mut client, 1, "chat:a", json!({"text": "hi"}), None).await;
    let Reply::Result(result) = reply else {
        panic!("published expected, got {reply:?}")
    };
    let result: Value = serde_json::to_value(&result).expect("JSON");
    assert_eq!(result["offset"], json!(1));
    assert!(result["epoch"].is_string());
    let ServerMessage::Publication(p) = next(&mut sub).await else {
        panic!("a publication expected")
    };
    assert_eq!(p.offset, 1);
    assert_eq!(p.epoch, result["epoch"].as_str().unwrap());
    assert_eq!(
        p.data.parse::<Value>().expect("JSON"),
        json!({"text": "hi"})
    );
}

#[tokio::test]
async fn without_the_grant_it_is_forbidden_and_nothing_is_published() {
    let (server, addr) = server().await;
    let (mut client, _) = Raw::connected(addr, None).await;
    let reply = publish(&mut client, 1, "chat:a", json!(1), None).await;
    assert_eq!(error_code(&reply), "forbidden");
    let (mut granted, _) = Raw::connected(addr, Some("pub")).await;
    let reply = publish(&mut granted, 1, "news", json!(1), None).await;
    assert_eq!(error_code(&reply), "forbidden", "outside the grant");
    let next = server.publish("chat:a", json!(2)).await.expect("published");
    assert_eq!(next.offset, 1, "the refused publish took no offset");
}

#[tokio::test]
async fn a_retry_with_the_same_idempotency_key_publishes_once() {
    let (server, addr) = server().await;
    let (mut client, _) = Raw::connected(addr, Some("pub")).await;
    let first = publish(&mut client, 1, "chat:a", json!("x"), Some("k1")).await;
    let (mut again, _) = Raw::connected(addr, Some("pub")).await;
    let retry = publish(&mut again, 1, "chat:a", json!("x"), Some("k1")).await;
    assert_eq!(first, retry, "the stored outcome is replayed");
    let next = server
        .publish("chat:a", json!("y"))
        .await
        .expect("published");
    assert_eq!(next.offset, 2, "one publication only");
}

#[tokio::test]
async fn an_oversize_publish_is_refused_and_nothing_is_published() {
    let (server, addr) = server().await;
    let (mut client, _) = Raw::connected(addr, Some("pub")).await;
    let big = json!("x".repeat(MAX_PUBLICATION));
    let reply = publish(&mut client, 1, "chat:b", big, None).await;
    assert_eq!(error_code(&reply), "too_large");
    let next = server.publish("chat:b", json!(1)).await.expect("published");
    assert_eq!(next.offset, 1, "nothing was published on chat:b");
}
