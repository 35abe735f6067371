//! What the cluster modules share: Redis brokers named as nodes, a node
//! serving the API with its cluster reach, and waiting for registrations.

use std::net::SocketAddr;
use std::sync::Arc;

use belay_redis::{RedisBroker, RedisConfig};
use belay_server::Server;
use belay_standalone::api::{router, ClusterApi};
use belay_test_support::services::RedisServer;

use crate::common::SOON;

/// A broker on `redis` for the node `node`.
pub(crate) async fn broker(redis: &RedisServer, node: &str) -> RedisBroker {
    let config = RedisConfig::new(redis.url()).node_id(node);
    RedisBroker::connect(config).await.expect("Redis answers")
}

/// A node serving the API (key `k`) with its cluster reach.
pub(crate) async fn node(broker: RedisBroker) -> SocketAddr {
    let server = Server::builder().broker(Arc::new(broker.clone())).build();
    let cluster = ClusterApi::new(&server, &broker);
    let routes = server
        .router()
        .merge(router(&server, "k", 4_096, Some(cluster)));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { server.serve(listener, routes).await });
    addr
}

/// Until `n` nodes have written their first heartbeat (within a bound).
pub(crate) async fn until_alive(broker: &RedisBroker, n: usize) {
    tokio::time::timeout(SOON, async {
        while broker.control().alive().await.map_or(0, |a| a.len()) < n {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("every node registered in time");
}
