//! Nodes on one real Redis: each a `Server` with its own `RedisBroker`, on
//! a loopback port, and a raw protocol client to talk to them.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{ClientMessage, ServerMessage, StreamPosition, Subscribe};
use belay_redis::{RedisBroker, RedisConfig};
use belay_server::rpc::Methods;
use belay_server::{Server, ServerConfig};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub use belay_test_support::services::RedisServer;
pub use belay_test_support::sockets::Raw;

/// Bound for anything that should happen at once.
pub const SOON: Duration = Duration::from_secs(5);

/// The configuration the tests use: short timeouts so a lost Redis shows
/// within a second.
pub fn config(redis: &RedisServer) -> RedisConfig {
    RedisConfig::new(redis.url())
        .command_timeout(Duration::from_millis(500))
        .probe_every(Duration::from_millis(200))
}

/// A node: a server on `config`'s Redis with the demo's methods, serving
/// on a loopback port.
pub async fn node(config: RedisConfig) -> (Server, SocketAddr) {
    let broker = RedisBroker::connect(config).await.expect("Redis answers");
    let server = Server::builder()
        .broker(Arc::new(broker))
        .methods(belay_demo::methods())
        .build();
    let addr = serve(&server).await;
    (server, addr)
}

/// Serve `server`'s router on a loopback port.
pub async fn serve(server: &Server) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let serving = server.clone();
    tokio::spawn(async move {
        let _ = serving.serve(listener, serving.router()).await;
    });
    addr
}

/// Subscribe on `raw` and return the first answer.
pub async fn subscribe(
    raw: &mut Raw,
    channel: &str,
    since: Option<StreamPosition>,
) -> ServerMessage {
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since,
        token: None,
    }))
    .await;
    next(raw).await
}

/// The next message that is not a ping, within [`SOON`].
pub async fn next(raw: &mut Raw) -> ServerMessage {
    tokio::time::timeout(SOON, raw.recv_skipping_pings())
        .await
        .expect("an answer in time")
        .expect("the connection stays open")
}

/// Subscribe from `since`, retrying while the broker answers `unavailable`
/// (its connections come back within their backoff, at most 2 s).
pub async fn resubscribe(
    raw: &mut Raw,
    channel: &str,
    since: belay_proto::message::StreamPosition,
) -> belay_proto::message::Subscribed {
    for _ in 0..100 {
        match subscribe(raw, channel, Some(since.clone())).await {
            ServerMessage::Subscribed(granted) => return granted,
            ServerMessage::Unsubscribed(u) if u.code == "unavailable" => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => panic!("{other:?}"),
        }
    }
    panic!("not subscribed within 10 s")
}

/// Publish `data` on `channel`, retrying (within 20 s) while the broker
/// answers `unavailable` (a failover under way); any other refusal fails
/// the test. The publication's offset.
pub async fn publish_once_available(
    server: &Server,
    channel: &str,
    data: serde_json::Value,
) -> u64 {
    for _ in 0..200 {
        match server.publish(channel, data.clone()).await {
            Ok(published) => return published.offset,
            Err(belay_server::broker::PublishError::Unavailable(_)) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("expected unavailable during the switch, got {other:?}"),
        }
    }
    panic!("no publication on {channel} taken within 20 s")
}

/// A client of the node at `addr` subscribed to `news`, and 1, 2, 3
/// published there by `server` (acknowledged) and delivered to it in
/// order: the client and its subscription.
pub async fn three_delivered(
    server: &Server,
    addr: SocketAddr,
) -> (Raw, belay_proto::message::Subscribed) {
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    for n in 1..=3 {
        server
            .publish("news", serde_json::json!(n))
            .await
            .expect("acknowledged");
    }
    assert_eq!(
        publications(&mut raw, 3).await,
        [
            (1, serde_json::json!(1)),
            (2, serde_json::json!(2)),
            (3, serde_json::json!(3))
        ]
    );
    (raw, first)
}

/// The next `n` publications' offsets and data.
pub async fn publications(raw: &mut Raw, n: usize) -> Vec<(u64, serde_json::Value)> {
    let mut got = Vec::new();
    while got.len() < n {
        match next(raw).await {
            ServerMessage::Publication(p) => got.push((p.offset, p.data.parse().expect("JSON"))),
            other => panic!("expected a publication, got {other:?}"),
        }
    }
    got
}

/// A node on its own runtime, so the test can kill it: its tasks stop
/// where they are, nothing is drained, its sockets close. Idempotency
/// claims lapse after 600 ms.
pub struct Node {
    pub addr: SocketAddr,
    pub broker: RedisBroker,
    pub server: Server,
    runtime: tokio::runtime::Runtime,
}

impl Node {
    pub async fn start(redis: RedisConfig, methods: Methods) -> Node {
        Node::start_built(redis, move |broker| {
            Server::builder()
                .config(ServerConfig::default().with_idempotency_lease(Duration::from_millis(600)))
                .broker(Arc::new(broker))
                .methods(methods)
                .build()
        })
        .await
    }

    /// A node whose server `build` makes from its broker (the cluster
    /// routes merged, as `start`).
    pub async fn start_built(
        redis: RedisConfig,
        build: impl FnOnce(RedisBroker) -> Server + Send + 'static,
    ) -> Node {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let (ready, started) = oneshot::channel();
        runtime.spawn(async move {
            let broker = RedisBroker::connect(redis).await.expect("Redis answers");
            let server = build(broker.clone());
            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let addr = listener.local_addr().expect("addr");
            let router = server.router().merge(broker.cluster_router(&server));
            let _ = ready.send((addr, broker, server.clone()));
            let _ = server.serve(listener, router).await;
        });
        let (addr, broker, server) = started.await.expect("the node started");
        Node {
            addr,
            broker,
            server,
            runtime,
        }
    }

    /// Stop the node at once, like `kill -9`.
    pub fn kill(self) {
        self.runtime.shutdown_background();
    }
}
