//! `belay serve --redis-cluster` nodes on a Redis Cluster (three primaries,
//! a replica each), the primary serving the feed's slot killed: its replica
//! is promoted, every node follows, and the feed goes on. The promoted
//! replica may lack what the old primary acknowledged, so the channel
//! starts a new epoch there: every client is told (a Resync), none sees a
//! silent gap, and the connections stay up through HAProxy.

use std::time::Duration;

use crate::harness::{
    finish_resynced, fleet, wait_for_more, wait_for_publications, Backing, Cluster,
};

const CLIENTS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_primary_killed_gives_every_client_an_announced_resync() {
    let mut cluster = Cluster::start_on_redis_cluster(2).await;
    let members = fleet(&cluster.url, CLIENTS).await;
    wait_for_publications(&members, 5).await;

    let Backing::Cluster(redis) = &mut cluster.backing else {
        unreachable!("a Redis Cluster")
    };
    let slot = redis.slot_of("belay.meta.{feed}").await;
    let primary = redis.primary_of(slot).await;
    let took = redis.kill_primary(primary).await;
    tokio::time::timeout(Duration::from_secs(30), wait_for_more(&members, 10))
        .await
        .expect("the feed goes on on the promoted replica");
    finish_resynced(members, "what the old primary may not have replicated").await;
    eprintln!("failover (kill to the replica serving): {took:?}");
}
