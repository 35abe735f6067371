//! `POST /api/presence` `{channel}`: the members of a presence channel
//! (one per subscription: session, user), 404 `not_found` for a channel
//! without presence, 400 `bad_request` for an unknown field.

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::message::{ClientMessage, ServerMessage, Subscribe};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{ChannelOptions, Namespaces, Server, ServerConfig};
use belay_standalone::api::router;
use belay_test_support::sockets::{http_call_with, Raw};
use serde_json::{json, Value};

const AUTH: &str = "Authorization: Bearer k";

/// The token is the user's name.
struct NamedUsers;

impl Authenticator for NamedUsers {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        token
            .map(Principal::user)
            .ok_or_else(|| AuthError::Unauthorized("a name is required".into()))
    }
}

async fn node() -> SocketAddr {
    let namespaces =
        Namespaces::new().with("room:*", ChannelOptions::default().with_presence(true));
    let server = Server::builder()
        .authenticator(NamedUsers)
        .config(ServerConfig::default().with_namespaces(namespaces))
        .build();
    let routes = server.router().merge(router(&server, "k", 4_096, None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { server.serve(listener, routes).await });
    addr
}

async fn presence(addr: SocketAddr, body: &str) -> (u16, Value) {
    let response = http_call_with(addr, "POST", "/api/presence", &[AUTH], Some(body)).await;
    let value = serde_json::from_str(&response.body).expect("JSON");
    (response.status, value)
}

#[tokio::test]
async fn presence_lists_the_subscribers_of_a_presence_channel() {
    let addr = node().await;
    let (mut alice, welcome) = Raw::connected(addr, Some("alice")).await;
    let ServerMessage::Welcome(welcome) = welcome else {
        panic!("welcome expected")
    };
    alice
        .send(&ClientMessage::Subscribe(Subscribe {
            channel: "room:1".into(),
            since: None,
            token: None,
        }))
        .await;
    let answer = tokio::time::timeout(Duration::from_secs(5), alice.recv_skipping_pings())
        .await
        .expect("in time");
    assert!(
        matches!(answer, Some(ServerMessage::Subscribed(_))),
        "{answer:?}"
    );

    assert_eq!(
        presence(addr, r#"{"channel":"room:1"}"#).await,
        (
            200,
            json!({ "members": [{ "client": welcome.session, "user": "alice" }] })
        )
    );
    assert_eq!(
        presence(addr, r#"{"channel":"room:2"}"#).await,
        (200, json!({ "members": [] }))
    );
    let (status, body) = presence(addr, r#"{"channel":"news"}"#).await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!("not_found")));
    let (status, body) = presence(addr, r#"{"channel":"room:1","x":1}"#).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (400, &json!("bad_request"))
    );
}
