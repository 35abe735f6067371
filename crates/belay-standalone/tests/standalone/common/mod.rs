//! What the proxy tests share: a backend app on a free loopback port, a
//! Belay node in front of it, and reading a connection's answers.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use belay_proto::message::{ClientMessage, Request, ServerMessage, Subscribe};
use belay_server::auth::Authenticator;
use belay_server::{Namespaces, Server, ServerConfig};
use belay_test_support::sockets::Raw;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub(crate) const SOON: Duration = Duration::from_secs(5);
/// How long the backend has to answer in these tests.
pub(crate) const BACKEND_TIMEOUT: Duration = Duration::from_millis(500);

/// `app` on a free loopback port; aborting the handle stops it.
pub(crate) async fn backend(app: Router) -> (String, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.expect("backend serves");
    });
    (format!("http://{addr}"), task)
}

/// A loopback URL where nothing listens.
pub(crate) async fn nobody() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    format!("http://{addr}/gone")
}

/// A Belay node with `auth` and `namespaces`, on a free loopback port.
pub(crate) async fn node(auth: impl Authenticator, namespaces: Namespaces) -> SocketAddr {
    let server = Server::builder()
        .authenticator(auth)
        .config(ServerConfig::default().with_namespaces(namespaces))
        .build();
    let routes = server.router().merge(server.admin_router());
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { server.serve(listener, routes).await });
    addr
}

pub(crate) fn subscribe(channel: &str) -> ClientMessage {
    ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: None,
        token: None,
    })
}

pub(crate) fn request(id: u64, method: &str, params: Value) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: method.into(),
        params,
        idem: None,
        timeout_ms: Some(5_000),
    })
}

/// The next message that is not a ping, within [`SOON`].
pub(crate) async fn next(raw: &mut Raw) -> ServerMessage {
    tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("a message in time")
        .expect("the connection is open")
}

/// A node with the HTTP API (key `k`, 4 KiB bodies) and the default
/// everything else, on a free loopback port.
pub(crate) async fn api_node() -> (Server, SocketAddr) {
    let server = Server::builder().build();
    let routes = server
        .router()
        .merge(belay_standalone::api::router(&server, "k", 4_096, None));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener, routes).await });
    (server, addr)
}

/// Subscribe `raw` to `channel` and check it is granted.
pub(crate) async fn subscribed(raw: &mut Raw, channel: &str) {
    raw.send(&subscribe(channel)).await;
    let answer = raw.recv_skipping_pings().await;
    assert!(
        matches!(answer, Some(ServerMessage::Subscribed(_))),
        "{answer:?}"
    );
}

/// The HS256 secret of the JWT tests.
pub(crate) const SECRET: &[u8] = b"a-test-secret-of-some-length";

/// A JWT with `claims`, signed with [`SECRET`].
pub(crate) fn jwt(claims: Value) -> String {
    let key = jsonwebtoken::EncodingKey::from_secret(SECRET).expect("key");
    jsonwebtoken::encode(&jsonwebtoken::Header::default(), &claims, &key).expect("token")
}

/// Now, in seconds since the Unix epoch (the clock JWTs are read on).
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// How a `connect` with `token` ends: the welcome, or the close.
pub(crate) async fn connect_with(
    addr: SocketAddr,
    token: &str,
) -> Result<(Raw, ServerMessage), belay_test_support::sockets::Closed> {
    let mut raw = Raw::open(addr).await;
    raw.send(&ClientMessage::Connect(belay_proto::message::Connect {
        protocol: 1,
        token: Some(token.to_owned()),
        session: None,
    }))
    .await;
    match raw.next_within(SOON).await {
        belay_test_support::sockets::Next::Message(welcome @ ServerMessage::Welcome(_)) => {
            Ok((raw, welcome))
        }
        belay_test_support::sockets::Next::Closed(closed) => Err(closed),
        other => panic!("a welcome or a close expected: {other:?}"),
    }
}

/// The reason a `connect` with `token` is refused for (it must close 4001).
pub(crate) async fn refused(addr: SocketAddr, token: &str) -> String {
    match connect_with(addr, token).await {
        Err(belay_test_support::sockets::Closed::Frame(4001, reason)) => reason,
        Err(other) => panic!("a 4001 close expected: {other:?}"),
        Ok((_, welcome)) => panic!("refusal expected, got {welcome:?}"),
    }
}
