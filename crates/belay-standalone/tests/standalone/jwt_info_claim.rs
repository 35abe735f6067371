//! A JWT's `info` claim describes its user to others: it is the user's
//! entry in presence; a token without it gives an entry without `info`.

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use belay_proto::message::ServerMessage;
use belay_server::{ChannelOptions, Namespaces, Server, ServerConfig};
use belay_standalone::api::router;
use belay_standalone::JwtAuthenticator;
use belay_test_support::sockets::{http_call_with, Raw};
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::{json, Value};

const SECRET: &[u8] = b"a-test-secret-of-some-length";

fn token(claims: Value) -> String {
    encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(SECRET).expect("key"),
    )
    .expect("token")
}

fn exp() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 600
}

async fn node() -> SocketAddr {
    let namespaces =
        Namespaces::new().with("room:*", ChannelOptions::default().with_presence(true));
    let server = Server::builder()
        .authenticator(JwtAuthenticator::hs256(SECRET).expect("key"))
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

async fn join(addr: SocketAddr, claims: Value) -> Raw {
    let (mut raw, _) = Raw::connected(addr, Some(&token(claims))).await;
    raw.send(&belay_proto::message::ClientMessage::Subscribe(
        belay_proto::message::Subscribe {
            channel: "room:1".into(),
            since: None,
            token: None,
        },
    ))
    .await;
    let answer = tokio::time::timeout(Duration::from_secs(5), raw.recv_skipping_pings())
        .await
        .expect("in time");
    assert!(
        matches!(answer, Some(ServerMessage::Subscribed(_))),
        "{answer:?}"
    );
    raw
}

#[tokio::test]
async fn the_info_claim_is_the_users_presence_entry() {
    let addr = node().await;
    let _alice = join(
        addr,
        json!({"sub": "alice", "exp": exp(), "channels": ["room:*"], "info": {"name": "Alice", "color": "teal"}}),
    )
    .await;
    let _bob = join(
        addr,
        json!({"sub": "bob", "exp": exp(), "channels": ["room:*"]}),
    )
    .await;
    let answer = http_call_with(
        addr,
        "POST",
        "/api/presence",
        &["Authorization: Bearer k"],
        Some(r#"{"channel":"room:1"}"#),
    )
    .await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let body: Value = serde_json::from_str(&answer.body).expect("JSON");
    let mut members: Vec<(String, Value)> = body["members"]
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["user"].as_str().expect("user").to_owned(),
                m["info"].clone(),
            )
        })
        .collect();
    members.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        members,
        [
            (
                "alice".to_owned(),
                json!({"name": "Alice", "color": "teal"})
            ),
            ("bob".to_owned(), Value::Null),
        ]
    );
}

/// `[[…[0]…]]` `depth` deep.
fn nested(depth: usize) -> Value {
    (0..depth).fold(json!(0), |inner, _| json!([inner]))
}

/// `info` is sent to other clients, so it may nest as deep as a
/// publication's data (`MAX_PAYLOAD_DEPTH`) and no deeper: found by the
/// `jwt_claims` fuzz target (a 200-deep `info` was accepted).
#[test]
fn an_info_claim_nested_deeper_than_a_publication_is_refused() {
    use belay_proto::server::MAX_PAYLOAD_DEPTH;
    use belay_server::auth::{AuthError, Authenticator};

    let jwt = JwtAuthenticator::hs256(SECRET).expect("key");
    let with_info = |depth| {
        jwt.authenticate(Some(&token(
            json!({"sub": "alice", "exp": exp(), "info": nested(depth)}),
        )))
    };
    assert!(with_info(MAX_PAYLOAD_DEPTH).is_ok());
    for depth in [MAX_PAYLOAD_DEPTH + 1, 200] {
        match with_info(depth) {
            Err(AuthError::Unauthorized(reason)) => assert!(reason.contains("`info`"), "{reason}"),
            other => panic!("info {depth} deep: {other:?}"),
        }
    }
}
