//! Fleet pacing across nodes: each node reports its admission rate and
//! open connections with its heartbeat and plans its reconnect slots for
//! the live nodes' totals (`Server::cluster_capacity`); a node that dies
//! drops out of the plan within the node TTL, and the one left plans alone;
//! a node's claimed rate counts for at most a million admissions per second.

use std::time::Duration;

use crate::common::{config, Node, Raw, RedisServer};
use belay_server::rpc::Methods;

/// A node TTL short enough that a death shows within a second.
const TTL: Duration = Duration::from_millis(600);

/// Wait (at most 10 s) until `node` plans as `expected` says.
async fn planned(node: &Node, expected: impl Fn(Option<(f64, u32, Option<usize>)>) -> bool) {
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let plan = node
                .server
                .cluster_capacity()
                .map(|c| (c.admission_rate(), c.nodes(), c.fleet()));
            if expected(plan) {
                return plan;
            }
            tokio::time::sleep(TTL / 6).await;
        }
    })
    .await;
    assert!(
        seen.is_ok(),
        "the plan never became the expected one: {:?}",
        node.server.cluster_capacity()
    );
}

#[tokio::test]
async fn nodes_plan_for_the_clusters_rate_and_a_dead_one_drops_out() {
    let redis = RedisServer::start().await;
    let a = Node::start(config(&redis).node_ttl(TTL), Methods::new()).await;
    let b = Node::start(config(&redis).node_ttl(TTL), Methods::new()).await;
    assert_eq!(a.server.admission_rate(), 500.0, "the default accept rate");
    // Connections on B count in A's fleet.
    let (_one, _) = Raw::connected(b.addr, None).await;
    let (_two, _) = Raw::connected(b.addr, None).await;

    planned(&a, |plan| plan == Some((1_000.0, 2, Some(2)))).await;
    planned(&b, |plan| {
        plan.is_some_and(|(rate, nodes, _)| rate == 1_000.0 && nodes == 2)
    })
    .await;

    b.kill();
    planned(&a, |plan| plan.is_none()).await;
    a.kill();
}

#[tokio::test]
async fn a_node_claiming_an_absurd_rate_counts_for_the_most_one_node_may() {
    let redis = RedisServer::start().await;
    let a = Node::start(config(&redis).node_ttl(TTL), Methods::new()).await;
    // Another "node" (anything that can write Redis) claims a rate that
    // would make every node plan for an instant reconnect.
    let client = redis::Client::open(redis.url()).expect("url");
    let mut connection = client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis answers");
    let far_future = u64::MAX / 4;
    let _: () = redis::cmd("HSET")
        .arg("belay.nodes")
        .arg("liar")
        .arg(format!("{far_future}|99999999999999|99999999999999"))
        .query_async(&mut connection)
        .await
        .expect("written");
    planned(&a, |plan| {
        plan.is_some_and(|(rate, nodes, _)| nodes == 2 && rate == 500.0 + 1_000_000.0)
    })
    .await;
    a.kill();
}
