//! `Client::subscribe_with_token` against a real server whose private
//! channels need a subscription token: with the token the channel's
//! publications arrive; without it the subscription is refused.

use std::time::Duration;

use belay_client::{Client, Item};
use belay_server::auth::{AuthError, Authenticator, Principal, Verdict};
use belay_server::{Access, ChannelOptions, Namespaces, Server, ServerConfig};
use serde_json::json;
use tokio::net::TcpListener;

/// The token for channel C is `key-for:C`.
struct KeyedChannels;

impl Authenticator for KeyedChannels {
    fn authenticate(&self, _token: Option<&str>) -> Result<Principal, AuthError> {
        Ok(Principal::user("alice"))
    }

    fn check_subscription_token(
        &self,
        _principal: &Principal,
        channel: &str,
        token: Option<&str>,
    ) -> Verdict<Option<std::time::Duration>> {
        Verdict::Now(if token == Some(format!("key-for:{channel}").as_str()) {
            Ok(None)
        } else {
            Err(AuthError::Forbidden("wrong key".into()))
        })
    }
}

#[tokio::test]
async fn a_token_opens_a_private_channel_and_its_absence_is_refused() {
    let namespaces = Namespaces::new().with(
        "private:*",
        ChannelOptions::default().with_subscribe(Access::Token),
    );
    let server = Server::builder()
        .authenticator(KeyedChannels)
        .config(ServerConfig::default().with_namespaces(namespaces))
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("ws://{}/ws", listener.local_addr().expect("addr"));
    let serving = server.clone();
    tokio::spawn(async move {
        let _ = serving.serve(listener, serving.router()).await;
    });

    let client = Client::builder(url).connect().expect("a usable URL");
    let mut open = client
        .subscribe_with_token("private:a", "key-for:private:a")
        .await
        .expect("subscribed");
    let mut shut = client.subscribe("private:b").await.expect("wanted");
    client.ready().await.expect("ready");
    server
        .publish("private:a", json!("hi"))
        .await
        .expect("published");
    let within = Duration::from_secs(5);
    let item = tokio::time::timeout(within, open.next())
        .await
        .expect("in time");
    assert!(
        matches!(&item, Some(Item::Publication(p)) if p.data == json!("hi")),
        "{item:?}"
    );
    let item = tokio::time::timeout(within, shut.next())
        .await
        .expect("in time");
    assert!(
        matches!(&item, Some(Item::Refused { code, .. }) if code == "forbidden"),
        "{item:?}"
    );
    client.close().await;
}
