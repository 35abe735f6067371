//! Joins and leaves are the server's to publish: a client whose grant
//! covers every channel is refused `forbidden` when it `$publish`es to
//! `$presence:room:1`, and nothing is published there.

mod common;

use std::time::Duration;

use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{ChannelOptions, Namespaces, Server, ServerConfig};
use common::{start, Raw};
use serde_json::json;

/// Everyone may publish anywhere.
struct PublishAnywhere;

impl Authenticator for PublishAnywhere {
    fn authenticate(&self, _token: Option<&str>) -> Result<Principal, AuthError> {
        Ok(Principal::user("mallory").publishing_to(vec!["*".to_string()]))
    }
}

#[tokio::test]
async fn a_client_cannot_publish_a_join() {
    let namespaces = Namespaces::new().with(
        "room:*",
        ChannelOptions::default()
            .with_presence(true)
            .with_join_leave(true),
    );
    let server = Server::builder()
        .config(ServerConfig::default().with_namespaces(namespaces))
        .authenticator(PublishAnywhere)
        .build();
    let addr = start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&ClientMessage::Request(Request {
        id: 1,
        method: "$publish".into(),
        params: json!({ "channel": "$presence:room:1", "data": { "join": { "client": "x", "user": "ceo" } } }),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    let answer = tokio::time::timeout(Duration::from_secs(5), raw.recv_skipping_pings())
        .await
        .expect("in time");
    let Some(ServerMessage::Response(response)) = answer else {
        panic!("a response expected, got {answer:?}")
    };
    let Reply::Error(error) = response.reply else {
        panic!("refused expected, got {:?}", response.reply)
    };
    assert_eq!(error.code, "forbidden");
    // The channel's first publication is the server's own (offset 1).
    let p = server
        .publish("$presence:room:1", json!(0))
        .await
        .expect("published");
    assert_eq!(p.offset, 1, "the client's $publish published nothing");
}
