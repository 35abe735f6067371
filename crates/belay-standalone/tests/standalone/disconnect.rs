//! `POST /api/disconnect`: every connection of one user closes 4003
//! `disconnected: REASON`, other users' stay; in a Redis cluster the call
//! to one node reaches the user's connections on every node.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use belay_redis::{RedisBroker, RedisConfig};
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::Server;
use belay_standalone::api::{router, ClusterApi};
use belay_test_support::services::RedisServer;
use belay_test_support::sockets::{http_call_with, Closed, Raw};
use serde_json::Value;

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

async fn disconnect(addr: SocketAddr, user: &str) -> Value {
    let body = format!(r#"{{"user":"{user}","reason":"banned"}}"#);
    let response = http_call_with(addr, "POST", "/api/disconnect", &[AUTH], Some(&body)).await;
    assert_eq!(response.status, 200, "{}", response.body);
    serde_json::from_str(&response.body).expect("JSON")
}

#[tokio::test]
async fn every_connection_of_the_user_closes_and_the_others_stay() {
    let addr = node(None).await;
    let (mut alice_1, _) = Raw::connected(addr, Some("alice")).await;
    let (mut alice_2, _) = Raw::connected(addr, Some("alice")).await;
    let (mut bob, _) = Raw::connected(addr, Some("bob")).await;
    assert_eq!(disconnect(addr, "alice").await["disconnected"], 2);
    for raw in [&mut alice_1, &mut alice_2] {
        assert_eq!(
            raw.closed_within(SOON).await,
            Closed::Frame(4003, "disconnected: banned".into())
        );
    }
    bob.send(&belay_proto::message::ClientMessage::Ping).await;
    assert!(matches!(
        tokio::time::timeout(SOON, bob.recv())
            .await
            .expect("in time"),
        Some(belay_proto::message::ServerMessage::Pong)
    ));
    assert_eq!(disconnect(addr, "nobody").await["disconnected"], 0);
}

#[tokio::test]
async fn in_a_cluster_the_call_to_one_node_reaches_the_users_connections_on_another() {
    let redis = RedisServer::start().await;
    let config = || RedisConfig::new(redis.url());
    let a = node(Some(RedisBroker::connect(config()).await.expect("Redis"))).await;
    let b = node(Some(RedisBroker::connect(config()).await.expect("Redis"))).await;
    let (mut on_b, _) = Raw::connected(b, Some("alice")).await;
    assert_eq!(disconnect(a, "alice").await["disconnected"], 1);
    assert_eq!(
        on_b.closed_within(SOON).await,
        Closed::Frame(4003, "disconnected: banned".into())
    );
}
