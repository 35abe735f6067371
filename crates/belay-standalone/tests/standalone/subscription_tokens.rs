//! Subscription tokens: in a namespace with `subscribe = token`, each
//! subscribe carries a JWT (same key as the connection's) naming the user
//! (`sub`) and the channel (`channel`). Missing, expired, another user's or
//! another channel's token is refused with a reason; a good one subscribes.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::common::{next, node};
use belay_proto::message::{ClientMessage, ServerMessage, Subscribe};
use belay_server::{Access, ChannelOptions, Namespaces};
use belay_standalone::JwtAuthenticator;
use belay_test_support::sockets::Raw;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};

const SECRET: &[u8] = b"a-test-secret-of-some-length";

fn jwt(claims: Value) -> String {
    let key = EncodingKey::from_secret(SECRET).expect("key");
    encode(&Header::default(), &claims, &key).expect("token")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

fn subscribe(channel: &str, token: Option<String>) -> ClientMessage {
    ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token,
    })
}

/// The answer to a subscribe: `Ok(())` subscribed, `Err((code, reason))`
/// (skipping the `sub_expiring` that follows a token's subscription,
/// spec/PROTOCOL.md §5.8).
async fn answer(raw: &mut Raw) -> Result<(), (String, String)> {
    let mut message = next(raw).await;
    while let ServerMessage::SubExpiring(_) = message {
        message = next(raw).await;
    }
    match message {
        ServerMessage::Subscribed(_) => Ok(()),
        ServerMessage::Unsubscribed(u) => Err((u.code, u.reason)),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn only_a_good_token_for_this_user_and_channel_subscribes() {
    let namespaces = Namespaces::new().with(
        "private:*",
        ChannelOptions::default().with_subscribe(Access::Token),
    );
    let auth = JwtAuthenticator::hs256(SECRET).expect("key");
    let addr = node(auth, namespaces).await;
    let connection = jwt(json!({"sub": "alice", "exp": now() + 600, "channels": ["news"]}));
    let (mut alice, _) = Raw::connected(addr, Some(&connection)).await;
    let token = |sub: &str, channel: &str, exp: u64| {
        Some(jwt(json!({"sub": sub, "channel": channel, "exp": exp})))
    };

    alice.send(&subscribe("private:1", None)).await;
    assert_eq!(
        answer(&mut alice).await,
        Err((
            "unauthorized".into(),
            "unauthorized: \"private:1\" needs a subscription token".into()
        ))
    );
    alice
        .send(&subscribe(
            "private:1",
            token("alice", "private:1", now() - 10),
        ))
        .await;
    assert_eq!(
        answer(&mut alice).await,
        Err((
            "unauthorized".into(),
            "unauthorized: subscription token expired".into()
        ))
    );
    alice
        .send(&subscribe(
            "private:1",
            token("bob", "private:1", now() + 60),
        ))
        .await;
    assert_eq!(
        answer(&mut alice).await,
        Err((
            "forbidden".into(),
            "forbidden: the subscription token is for another user".into()
        ))
    );
    alice
        .send(&subscribe(
            "private:1",
            token("alice", "private:2", now() + 60),
        ))
        .await;
    assert_eq!(
        answer(&mut alice).await,
        Err((
            "forbidden".into(),
            "forbidden: the subscription token is not for \"private:1\"".into()
        ))
    );
    // The connection token itself (no `channel`) opens nothing.
    alice
        .send(&subscribe("private:1", Some(connection.clone())))
        .await;
    assert!(answer(&mut alice).await.is_err());

    alice
        .send(&subscribe(
            "private:1",
            token("alice", "private:1", now() + 60),
        ))
        .await;
    assert_eq!(answer(&mut alice).await, Ok(()));
    // Channels of other namespaces need none (the grant opens `news`).
    alice.send(&subscribe("news", None)).await;
    assert_eq!(answer(&mut alice).await, Ok(()));
}
