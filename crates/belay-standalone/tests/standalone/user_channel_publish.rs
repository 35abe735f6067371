//! A client's `$publish` to a user channel `#USER`: the user channels are
//! the server's (and the HTTP API's) to write, so a publish grant, even
//! `*`, never overrides the namespace: `publish = "nobody"` refuses it, and
//! so does the absence of any rule covering `#USER`; only a rule that
//! covers it and says otherwise (`grant`) lets a grant write to it.

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use belay_proto::message::{Reply, ServerMessage};
use belay_server::{Access, ChannelOptions, Namespaces};
use belay_standalone::JwtAuthenticator;
use belay_test_support::sockets::Raw;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};

use crate::common::{next, node, request, subscribed};

const SECRET: &[u8] = b"a-test-secret-of-some-length";

fn token(user: &str, publish: &[&str]) -> String {
    let exp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 600;
    encode(
        &Header::default(),
        &json!({"sub": user, "exp": exp, "publish": publish}),
        &EncodingKey::from_secret(SECRET).expect("key"),
    )
    .expect("token")
}

async fn jwt_node(namespaces: Namespaces) -> SocketAddr {
    node(JwtAuthenticator::hs256(SECRET).expect("key"), namespaces).await
}

/// Alice, granted `publish: ["*"]`, publishes to `#bob`: the answer.
async fn alice_publishes_to_bob(addr: SocketAddr) -> Reply {
    let (mut alice, _) = Raw::connected(addr, Some(&token("alice", &["*"]))).await;
    alice
        .send(&request(
            1,
            "$publish",
            json!({"channel": "#bob", "data": {"forged": true}}),
        ))
        .await;
    match next(&mut alice).await {
        ServerMessage::Response(r) => r.reply,
        other => panic!("a response, got {other:?}"),
    }
}

fn refused_code(reply: &Reply) -> Option<String> {
    match reply {
        Reply::Error(e) => Some(e.code.clone()),
        Reply::Result(_) => None,
    }
}

#[tokio::test]
async fn a_wildcard_grant_does_not_override_a_nobody_namespace() {
    let namespaces =
        Namespaces::new().with("#*", ChannelOptions::default().with_publish(Access::Nobody));
    let addr = jwt_node(namespaces).await;
    let (mut bob, _) = Raw::connected(addr, Some(&token("bob", &[]))).await;
    subscribed(&mut bob, "#bob").await;
    let reply = alice_publishes_to_bob(addr).await;
    assert_eq!(
        refused_code(&reply).as_deref(),
        Some("forbidden"),
        "{reply:?}"
    );
    // Nothing reached bob: a ping or silence, never a publication.
    let arrived = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        bob.recv_skipping_pings(),
    )
    .await;
    assert!(arrived.is_err(), "bob received {arrived:?}");
}

#[tokio::test]
async fn without_a_rule_covering_user_channels_a_wildcard_grant_is_refused() {
    let addr = jwt_node(Namespaces::new()).await;
    let reply = alice_publishes_to_bob(addr).await;
    assert_eq!(
        refused_code(&reply).as_deref(),
        Some("forbidden"),
        "{reply:?}"
    );
}

#[tokio::test]
async fn a_rule_covering_user_channels_with_grant_lets_the_grant_publish() {
    let namespaces =
        Namespaces::new().with("#*", ChannelOptions::default().with_publish(Access::Grant));
    let addr = jwt_node(namespaces).await;
    let (mut bob, _) = Raw::connected(addr, Some(&token("bob", &[]))).await;
    subscribed(&mut bob, "#bob").await;
    let reply = alice_publishes_to_bob(addr).await;
    assert!(matches!(reply, Reply::Result(_)), "{reply:?}");
    let ServerMessage::Publication(p) = next(&mut bob).await else {
        panic!("a publication")
    };
    let data: Value = p.data.parse().expect("JSON");
    assert_eq!(
        (p.channel.as_str(), data),
        ("#bob", json!({"forged": true}))
    );
}
