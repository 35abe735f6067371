//! A refresh never gives a session more than a new connection with the
//! new token would get: it keeps the session's user and host, and the
//! subscriptions the new grants no longer allow end with `unsubscribed`
//! `forbidden` (those it still allows go on).

use crate::common::{connect_with, jwt, next, node, subscribed, unix_now, SOON};
use belay_proto::message::{ClientMessage, Refresh, ServerMessage};
use belay_server::Namespaces;
use belay_standalone::JwtAuthenticator;
use belay_test_support::sockets::Closed;
use serde_json::json;

fn auth() -> JwtAuthenticator {
    JwtAuthenticator::hs256(crate::common::SECRET).expect("key")
}

fn refresh(token: String) -> ClientMessage {
    ClientMessage::Refresh(Refresh { token })
}

/// How host `pc-1`'s session, holding its calls channel, ends when it
/// refreshes with `claims`.
async fn host_refreshing_with(claims: serde_json::Value) -> Closed {
    let addr = node(auth(), Namespaces::new()).await;
    let first = jwt(json!({"sub": "pc", "host": "pc-1", "exp": unix_now() + 600}));
    let (mut host, _) = connect_with(addr, &first).await.expect("welcome");
    subscribed(&mut host, "$host-calls:pc-1").await;
    host.send(&refresh(jwt(claims))).await;
    host.closed_within(SOON).await
}

fn another_host() -> Closed {
    Closed::Frame(
        4001,
        "unauthorized: the refreshed token names another host".into(),
    )
}

#[tokio::test]
async fn a_refresh_cannot_make_a_host_another_host() {
    let other = json!({"sub": "pc", "host": "pc-2", "exp": unix_now() + 600});
    assert_eq!(host_refreshing_with(other).await, another_host());
}

#[tokio::test]
async fn a_refresh_cannot_drop_the_host_claim() {
    let plain = json!({"sub": "pc", "exp": unix_now() + 600, "channels": ["*"]});
    assert_eq!(host_refreshing_with(plain).await, another_host());
}

#[tokio::test]
async fn subscriptions_the_new_grant_does_not_allow_end() {
    let addr = node(auth(), Namespaces::new()).await;
    let wide =
        jwt(json!({"sub": "alice", "exp": unix_now() + 600, "channels": ["news", "admin:*"]}));
    let (mut alice, _) = connect_with(addr, &wide).await.expect("welcome");
    subscribed(&mut alice, "news").await;
    subscribed(&mut alice, "admin:secrets").await;
    let narrow = jwt(json!({"sub": "alice", "exp": unix_now() + 600, "channels": ["news"]}));
    alice.send(&refresh(narrow)).await;
    assert!(matches!(
        next(&mut alice).await,
        ServerMessage::Refreshed(_)
    ));
    let ServerMessage::Unsubscribed(ended) = next(&mut alice).await else {
        panic!("the subscription the new token does not allow ends")
    };
    assert_eq!(
        (ended.channel.as_str(), ended.code.as_str()),
        ("admin:secrets", "forbidden")
    );
    // `news` goes on: subscribing again replaces it, confirmed.
    subscribed(&mut alice, "news").await;
}
