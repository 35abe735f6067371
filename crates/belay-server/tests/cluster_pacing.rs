//! A node behind a balancer plans its reconnect slots for the cluster's
//! admission capacity, set at build time or fed at runtime by the control
//! plane (`Server::set_cluster_capacity`).

mod common;

use belay_proto::message::{Pacing, ServerMessage};
use belay_server::{ClusterCapacity, Server, ServerConfig};
use common::Raw;

/// The pacing of the `welcome` a new connection gets.
async fn welcome_pacing(server: &Server) -> Pacing {
    let addr = common::start(server).await;
    let (_raw, welcome) = Raw::connected(addr, None).await;
    let ServerMessage::Welcome(welcome) = welcome else {
        unreachable!("Raw::connected returns the welcome")
    };
    welcome.pacing.expect("pacing while healthy")
}

/// 500 admissions per second, 10,000 clients expected: alone, a period of
/// 10,000 / (0.95 × 500) = 21.052 s.
fn config() -> ServerConfig {
    ServerConfig::default()
        .with_accept_rate(500.0)
        .with_expected_fleet(10_000)
}

#[tokio::test]
async fn the_capacity_fed_at_runtime_sizes_the_next_welcomes_period() {
    let server = common::server(config());
    assert_eq!(server.cluster_capacity(), None);
    assert_eq!(welcome_pacing(&server).await.period_ms, 21_052);

    // Four nodes admitting 1,500/s in all: the cluster's fleet is taken as
    // 4 × 10,000, so 40,000 / (0.95 × 1,500) = 28.070 s.
    let cluster = ClusterCapacity::new(1_500.0, 4).expect("a capacity");
    server.set_cluster_capacity(Some(cluster));
    assert_eq!(server.cluster_capacity(), Some(cluster));
    assert_eq!(welcome_pacing(&server).await.period_ms, 28_070);

    // The control plane counts 60,000 clients: 60,000 / 1,425 = 42.105 s.
    server.set_cluster_capacity(Some(cluster.with_fleet(60_000)));
    assert_eq!(welcome_pacing(&server).await.period_ms, 42_105);

    // Back to this node alone.
    server.set_cluster_capacity(None);
    assert_eq!(welcome_pacing(&server).await.period_ms, 21_052);
}

#[tokio::test]
async fn the_builder_sets_the_capacity_from_the_start() {
    let cluster = ClusterCapacity::new(2_000.0, 2).expect("a capacity");
    let server = Server::builder()
        .config(config())
        .cluster_capacity(cluster)
        .build();
    assert_eq!(server.cluster_capacity(), Some(cluster));
    // 2 × 10,000 / (0.95 × 2,000) = 10.526 s: a faster cluster, a shorter
    // period.
    assert_eq!(welcome_pacing(&server).await.period_ms, 10_526);
}
