//! Connection and subscription tokens cannot stand in for each other: a
//! subscription token (it carries `channel`) neither opens nor refreshes a
//! connection, a connection token opens no private channel, and a token
//! without a `channels` claim grants no channel unless the config says so.

use crate::common::{connect_with, jwt, next, node, refused, subscribe, subscribed, unix_now};
use belay_proto::message::{ClientMessage, Refresh, ServerMessage, Subscribe};
use belay_server::{Access, ChannelOptions, Namespaces};
use belay_standalone::{JwtAuthenticator, MissingChannels};
use belay_test_support::sockets::Closed;
use serde_json::json;

use crate::common::SOON;

fn auth() -> JwtAuthenticator {
    JwtAuthenticator::hs256(crate::common::SECRET).expect("key")
}

fn private_namespaces() -> Namespaces {
    Namespaces::new().with(
        "private:*",
        ChannelOptions::default().with_subscribe(Access::Token),
    )
}

/// Alice's subscription token for `private:alice`.
fn alices_subscription_token() -> String {
    jwt(json!({"sub": "alice", "channel": "private:alice", "exp": unix_now() + 600}))
}

#[tokio::test]
async fn a_subscription_token_does_not_open_a_connection() {
    let addr = node(auth(), private_namespaces()).await;
    assert_eq!(
        refused(addr, &alices_subscription_token()).await,
        "unauthorized: a subscription token cannot open or refresh a connection (claim `channel`)"
    );
}

#[tokio::test]
async fn a_subscription_token_does_not_refresh_a_connection() {
    let addr = node(auth(), private_namespaces()).await;
    let connection = jwt(json!({"sub": "alice", "exp": unix_now() + 600, "channels": ["news"]}));
    let (mut alice, _) = connect_with(addr, &connection).await.expect("welcome");
    alice
        .send(&ClientMessage::Refresh(Refresh {
            token: alices_subscription_token(),
        }))
        .await;
    assert_eq!(
        alice.closed_within(SOON).await,
        Closed::Frame(
            4001,
            "unauthorized: a subscription token cannot open or refresh a connection (claim `channel`)"
                .into()
        )
    );
}

#[tokio::test]
async fn a_connection_token_opens_no_private_channel() {
    let addr = node(auth(), private_namespaces()).await;
    let connection = jwt(json!({"sub": "alice", "exp": unix_now() + 600}));
    let (mut alice, _) = connect_with(addr, &connection).await.expect("welcome");
    alice
        .send(&ClientMessage::Subscribe(Subscribe {
            channel: "private:alice".into(),
            since: None,
            token: Some(connection.clone()),
        }))
        .await;
    let ServerMessage::Unsubscribed(refusal) = next(&mut alice).await else {
        panic!("a refusal expected")
    };
    assert_eq!(
        refusal.reason,
        "unauthorized: a connection token is not a subscription token (no claim `channel`)"
    );
}

#[tokio::test]
async fn no_channels_claim_grants_no_channel_by_default() {
    let addr = node(auth(), Namespaces::new()).await;
    let connection = jwt(json!({"sub": "alice", "exp": unix_now() + 600}));
    let (mut alice, _) = connect_with(addr, &connection).await.expect("welcome");
    alice.send(&subscribe("admin:secrets")).await;
    let ServerMessage::Unsubscribed(refusal) = next(&mut alice).await else {
        panic!("a refusal expected")
    };
    assert_eq!(refusal.code, "forbidden");
    // Her own user channel stays hers.
    subscribed(&mut alice, "#alice").await;
}

#[tokio::test]
async fn no_channels_claim_grants_every_channel_when_configured() {
    let addr = node(
        auth().missing_channels(MissingChannels::Any),
        Namespaces::new(),
    )
    .await;
    let connection = jwt(json!({"sub": "alice", "exp": unix_now() + 600}));
    let (mut alice, _) = connect_with(addr, &connection).await.expect("welcome");
    subscribed(&mut alice, "admin:secrets").await;
}
