//! Redis restarted without persistence: every channel's history and epoch
//! are gone. Every client is told (a Resync), none sees a silent gap, the
//! connections stay up through HAProxy, and the feed goes on in a new
//! epoch. Each node logs the PUB/SUB connection lost and back (with how
//! long it was down).

use std::time::Duration;

use crate::harness::{
    finish_resynced, fleet, wait_for_more, wait_for_publications, Backing, Cluster,
};

const CLIENTS: usize = 8;
/// How long a node's log line may take to reach the test.
const BOUND: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_gives_every_client_an_announced_resync() {
    let mut cluster = Cluster::start(2).await;
    let members = fleet(&cluster.url, CLIENTS).await;
    wait_for_publications(&members, 5).await;

    let Backing::Redis(redis) = &mut cluster.backing else {
        unreachable!("one Redis")
    };
    redis.restart().await;
    // Back within the broker's reconnect backoff (at most 500 ms) and the
    // client's resubscribe after `unavailable`.
    tokio::time::timeout(Duration::from_secs(30), wait_for_more(&members, 10))
        .await
        .expect("the feed goes on after the restart");

    for node in &cluster.nodes {
        assert!(
            node.logs_within(&["WARN", "PUB/SUB connection to Redis lost"], BOUND)
                .await,
            "node {} logged the loss",
            node.port
        );
        assert!(
            node.logs_within(
                &["INFO", "PUB/SUB connection to Redis back", "down_ms="],
                BOUND
            )
            .await,
            "node {} logged the return",
            node.port
        );
    }
    finish_resynced(members, "the lost history").await;
}
