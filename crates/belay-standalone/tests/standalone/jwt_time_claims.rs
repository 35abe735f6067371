//! The time claims of a JWT: `nbf` ahead of the clock refuses the token
//! (connection and subscription tokens alike), within the leeway it is
//! let in; an `exp` too large for any clock is cut to the longest lifetime,
//! never a panic.

use std::time::Duration;

use crate::common::{connect_with, jwt, next, node, refused, subscribed, unix_now};
use belay_proto::message::{ClientMessage, ServerMessage, Subscribe};
use belay_server::auth::MAX_CREDENTIAL_LIFETIME;
use belay_server::{Access, ChannelOptions, Namespaces};
use belay_standalone::JwtAuthenticator;
use serde_json::json;

fn auth() -> JwtAuthenticator {
    JwtAuthenticator::hs256(crate::common::SECRET).expect("key")
}

#[tokio::test]
async fn a_token_not_valid_yet_is_refused() {
    let addr = node(auth(), Namespaces::new()).await;
    let later = jwt(json!({"sub": "alice", "exp": unix_now() + 3_600, "nbf": unix_now() + 1_800}));
    assert_eq!(
        refused(addr, &later).await,
        "unauthorized: token not valid yet (nbf)"
    );
}

#[tokio::test]
async fn a_token_valid_within_the_leeway_is_let_in() {
    let addr = node(auth().leeway(Duration::from_secs(60)), Namespaces::new()).await;
    let soon = jwt(json!({"sub": "alice", "exp": unix_now() + 3_600, "nbf": unix_now() + 30}));
    assert!(connect_with(addr, &soon).await.is_ok());
}

#[tokio::test]
async fn a_subscription_token_not_valid_yet_is_refused() {
    let namespaces = Namespaces::new().with(
        "private:*",
        ChannelOptions::default().with_subscribe(Access::Token),
    );
    let addr = node(auth(), namespaces).await;
    let connection = jwt(json!({"sub": "alice", "exp": unix_now() + 600}));
    let (mut alice, _) = connect_with(addr, &connection).await.expect("welcome");
    let later = jwt(json!({
        "sub": "alice", "channel": "private:1",
        "exp": unix_now() + 3_600, "nbf": unix_now() + 1_800,
    }));
    alice
        .send(&ClientMessage::Subscribe(Subscribe {
            channel: "private:1".into(),
            since: None,
            token: Some(later),
        }))
        .await;
    let ServerMessage::Unsubscribed(refusal) = next(&mut alice).await else {
        panic!("a refusal expected")
    };
    assert_eq!(
        refusal.reason,
        "unauthorized: subscription token not valid yet (nbf)"
    );
}

#[tokio::test]
async fn an_expiry_past_any_clock_is_cut_to_the_longest_lifetime() {
    let namespaces = Namespaces::new().with(
        "news",
        ChannelOptions::default().with_subscribe(Access::Anyone),
    );
    let addr = node(auth(), namespaces).await;
    let forever = jwt(json!({"sub": "alice", "exp": u64::MAX}));
    let (mut alice, welcome) = connect_with(addr, &forever).await.expect("welcome");
    let ServerMessage::Welcome(welcome) = welcome else {
        unreachable!()
    };
    let left = welcome.expires_in_ms.expect("an expiry");
    assert!(
        u128::from(left) <= MAX_CREDENTIAL_LIFETIME.as_millis(),
        "{left} ms"
    );
    // The session serves: its task did not panic.
    subscribed(&mut alice, "news").await;
}
