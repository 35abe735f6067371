//! `POST /api/user_publish` `{user, data}`: a publication on the user
//! channel `#USER` reaches every connection of that user that subscribed
//! it, and only that user may subscribe it (the default authorizer); in a
//! Redis cluster the call to one node reaches the user on another.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{ClientMessage, ServerMessage, Subscribe};
use belay_redis::{RedisBroker, RedisConfig};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::Server;
use belay_standalone::api::{router, ClusterApi};
use belay_test_support::services::RedisServer;
use belay_test_support::sockets::{http_call_with, Raw};
use serde_json::{json, Value};

const AUTH: &str = "Authorization: Bearer k";
const SOON: Duration = Duration::from_secs(5);

/// The token is the user's name.
struct NamedUsers;

impl Authenticator for NamedUsers {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        token
            .map(Principal::user)
            .ok_or_else(|| AuthError::Unauthorized("a name is required".into()))
    }
}

async fn node(broker: Option<RedisBroker>) -> SocketAddr {
    let mut builder = Server::builder().authenticator(NamedUsers);
    if let Some(broker) = &broker {
        builder = builder.broker(Arc::new(broker.clone()));
    }
    let server = builder.build();
    let cluster = broker.as_ref().map(|b| ClusterApi::new(&server, b));
    let routes = server.router().merge(router(&server, "k", 4_096, cluster));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { server.serve(listener, routes).await });
    addr
}

async fn user_publish(addr: SocketAddr, body: &str) -> (u16, Value) {
    let response = http_call_with(addr, "POST", "/api/user_publish", &[AUTH], Some(body)).await;
    let value = serde_json::from_str(&response.body).expect("JSON");
    (response.status, value)
}

/// `user`'s connection to `addr`, subscribed to `channel`: the answer.
async fn subscribed(addr: SocketAddr, user: &str, channel: &str) -> (Raw, ServerMessage) {
    let (mut raw, _) = Raw::connected(addr, Some(user)).await;
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    }))
    .await;
    let answer = tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("an answer");
    (raw, answer)
}

async fn publication(raw: &mut Raw) -> (String, u64, Value) {
    let message = tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("in time");
    let Some(ServerMessage::Publication(p)) = message else {
        panic!("a publication, got {message:?}")
    };
    (p.channel.clone(), p.offset, p.data.parse().expect("JSON"))
}

#[tokio::test]
async fn every_connection_of_the_user_receives_it_and_another_user_may_not_subscribe() {
    let addr = node(None).await;
    let (mut first, answer) = subscribed(addr, "alice", "#alice").await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    let (mut second, answer) = subscribed(addr, "alice", "#alice").await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    let (_bob, answer) = subscribed(addr, "bob", "#alice").await;
    assert!(
        !matches!(answer, ServerMessage::Subscribed(_))
            && format!("{answer:?}").contains("another user's channel"),
        "{answer:?}"
    );
    let (status, answer) = user_publish(
        addr,
        r#"{"user":"alice","data":{"n":1},"idempotency_key":"u-1"}"#,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        (answer["channel"].as_str(), answer["offset"].as_u64()),
        (Some("#alice"), Some(1))
    );
    for raw in [&mut first, &mut second] {
        assert_eq!(
            publication(raw).await,
            ("#alice".into(), 1, json!({"n": 1}))
        );
    }
    // The key publishes once and answers the same.
    let (status, again) = user_publish(
        addr,
        r#"{"user":"alice","data":{"n":1},"idempotency_key":"u-1"}"#,
    )
    .await;
    assert_eq!((status, again), (200, answer));
    let (status, _) = user_publish(addr, r#"{"user":"alice","data":2}"#).await;
    assert_eq!(status, 200);
    assert_eq!(
        publication(&mut first).await,
        ("#alice".into(), 2, json!(2))
    );
}

#[tokio::test]
async fn a_user_that_is_no_channel_name_and_unknown_fields_are_bad_requests() {
    let addr = node(None).await;
    for body in [
        r#"{"user":"","data":1}"#,
        r#"{"user":"a b","data":1}"#,
        r#"{"user":"alice"}"#,
        r#"{"user":"alice","data":1,"channel":"x"}"#,
    ] {
        let (status, answer) = user_publish(addr, body).await;
        assert_eq!(
            (status, answer["error"]["code"].as_str()),
            (400, Some("bad_request")),
            "{body}"
        );
    }
}

#[tokio::test]
async fn in_a_cluster_the_call_to_one_node_reaches_the_user_on_another() {
    let redis = RedisServer::start().await;
    let config = || RedisConfig::new(redis.url());
    let a = node(Some(RedisBroker::connect(config()).await.expect("Redis"))).await;
    let b = node(Some(RedisBroker::connect(config()).await.expect("Redis"))).await;
    let (mut on_b, answer) = subscribed(b, "alice", "#alice").await;
    assert!(matches!(answer, ServerMessage::Subscribed(_)), "{answer:?}");
    let (status, answer) = user_publish(a, r#"{"user":"alice","data":"hi"}"#).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        publication(&mut on_b).await,
        ("#alice".into(), 1, json!("hi"))
    );
}
