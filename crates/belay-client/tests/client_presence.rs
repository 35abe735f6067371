//! `Client::presence` against a real server: the members of a presence
//! channel, typed (session, user, info), and a channel without presence
//! refused `bad_request`.

use belay_client::{Client, PresenceError, RequestError};
use belay_proto::message::RawJson;
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{ChannelOptions, Namespaces, Server, ServerConfig};
use serde_json::json;
use tokio::net::TcpListener;

/// Everyone is alice, with info `{"name": "Alice"}`.
struct Alice;

impl Authenticator for Alice {
    fn authenticate(&self, _token: Option<&str>) -> Result<Principal, AuthError> {
        Ok(Principal::user("alice").with_info(RawJson::from_value(&json!({"name": "Alice"}))))
    }
}

#[tokio::test]
async fn presence_lists_the_members_typed() {
    let namespaces =
        Namespaces::new().with("room:*", ChannelOptions::default().with_presence(true));
    let server = Server::builder()
        .authenticator(Alice)
        .config(ServerConfig::default().with_namespaces(namespaces))
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("ws://{}/ws", listener.local_addr().expect("addr"));
    let serving = server.clone();
    tokio::spawn(async move {
        let _ = serving.serve(listener, serving.router()).await;
    });
    let client = Client::builder(url).connect().expect("a usable URL");
    let _room = client.subscribe("room:1").await.expect("subscribed");
    client.ready().await.expect("ready");
    let members = client.presence("room:1").await.expect("members");
    assert_eq!(members.len(), 1, "{members:?}");
    assert_eq!(members[0].user, "alice");
    assert!(!members[0].client.is_empty());
    assert_eq!(members[0].info, Some(json!({"name": "Alice"})));
    let refused = client.presence("news").await;
    assert!(
        matches!(&refused, Err(PresenceError::Request(RequestError::Server { code, .. })) if code == "bad_request"),
        "{refused:?}"
    );
    client.close().await;
}
