//! Presence on the memory broker over real sockets: a subscriber of a
//! `presence` namespace is a member (seen by `$presence`), leaves on
//! unsubscribe and on close, and with `join_leave` every join and leave is a
//! publication with an offset on `$presence:CHANNEL`; `$presence` on a
//! channel without presence answers `bad_request`.

mod common;

use std::time::Duration;

use belay_proto::message::{
    ClientMessage, RawJson, Reply, Request, ServerMessage, Subscribe, Unsubscribe,
};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{ChannelOptions, Namespaces, Server, ServerConfig};
use common::{start, Raw};
use serde_json::{json, Value};

/// The token is the user; its info is `{"name": TOKEN}`.
struct TokenIsUser;

impl Authenticator for TokenIsUser {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        let user = token.unwrap_or("anonymous");
        Ok(Principal::user(user).with_info(RawJson::from_value(&json!({ "name": user }))))
    }
}

async fn next(raw: &mut Raw) -> ServerMessage {
    tokio::time::timeout(Duration::from_secs(5), raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("the connection stays open")
}

async fn subscribe(raw: &mut Raw, channel: &str) {
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    }))
    .await;
    match next(raw).await {
        ServerMessage::Subscribed(s) => assert_eq!(s.channel, channel),
        other => panic!("subscribed expected, got {other:?}"),
    }
}

async fn query(raw: &mut Raw, id: u64, channel: &str) -> Result<Value, String> {
    raw.send(&ClientMessage::Request(Request {
        id,
        method: "$presence".into(),
        params: json!({ "channel": channel }),
        idem: None,
        timeout_ms: None,
    }))
    .await;
    loop {
        if let ServerMessage::Response(response) = next(raw).await {
            assert_eq!(response.id, id);
            return match response.reply {
                Reply::Result(result) => Ok(serde_json::from_str(result.get()).unwrap()),
                Reply::Error(error) => Err(error.code),
            };
        }
    }
}

/// The next publication on `$presence:room:1`: (offset, data).
async fn presence_event(raw: &mut Raw) -> (u64, Value) {
    loop {
        if let ServerMessage::Publication(p) = next(raw).await {
            assert_eq!(p.channel, "$presence:room:1");
            return (p.offset, serde_json::from_str(p.data.get()).unwrap());
        }
    }
}

#[tokio::test]
async fn members_join_and_leave_with_offsets_on_the_presence_channel() {
    let namespaces = Namespaces::new().with(
        "room:*",
        ChannelOptions::default()
            .with_presence(true)
            .with_join_leave(true),
    );
    let server = Server::builder()
        .config(ServerConfig::default().with_namespaces(namespaces))
        .authenticator(TokenIsUser)
        .build();
    let addr = start(&server).await;

    let (mut watcher, _) = Raw::connected(addr, Some("watcher")).await;
    subscribe(&mut watcher, "$presence:room:1").await;
    assert_eq!(
        query(&mut watcher, 1, "room:1").await,
        Ok(json!({ "members": [] }))
    );

    let (mut alice, welcome) = Raw::connected(addr, Some("alice")).await;
    let ServerMessage::Welcome(welcome) = welcome else {
        panic!("welcome expected")
    };
    subscribe(&mut alice, "room:1").await;
    let member = json!({ "client": welcome.session, "user": "alice", "info": { "name": "alice" } });
    assert_eq!(
        presence_event(&mut watcher).await,
        (1, json!({ "join": member }))
    );
    assert_eq!(
        query(&mut watcher, 2, "room:1").await,
        Ok(json!({ "members": [member] }))
    );

    // Leave on unsubscribe.
    alice
        .send(&ClientMessage::Unsubscribe(Unsubscribe {
            channel: "room:1".into(),
        }))
        .await;
    assert_eq!(
        presence_event(&mut watcher).await,
        (2, json!({ "leave": member }))
    );
    assert_eq!(
        query(&mut watcher, 3, "room:1").await,
        Ok(json!({ "members": [] }))
    );

    // Leave on close.
    let (mut bob, welcome) = Raw::connected(addr, Some("bob")).await;
    let ServerMessage::Welcome(welcome) = welcome else {
        panic!("welcome expected")
    };
    subscribe(&mut bob, "room:1").await;
    let member = json!({ "client": welcome.session, "user": "bob", "info": { "name": "bob" } });
    assert_eq!(
        presence_event(&mut watcher).await,
        (3, json!({ "join": member }))
    );
    drop(bob);
    assert_eq!(
        presence_event(&mut watcher).await,
        (4, json!({ "leave": member }))
    );
    assert_eq!(
        query(&mut watcher, 4, "room:1").await,
        Ok(json!({ "members": [] }))
    );

    // A channel without presence, and params without a channel.
    assert_eq!(
        query(&mut watcher, 5, "news").await,
        Err("bad_request".into())
    );
}
