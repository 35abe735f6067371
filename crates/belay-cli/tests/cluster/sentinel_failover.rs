//! Redis behind Sentinel, the primary killed: the Sentinels promote the
//! replica, every `belay serve` node (configured with `broker.sentinels`)
//! finds it on its next reconnect, and the feed goes on. The promoted
//! replica is another Redis process, so each channel starts a new epoch
//! there: every client is told (a Resync), none sees a silent gap, and the
//! connections stay up through HAProxy.

use std::time::Duration;

use crate::harness::{
    finish_resynced, fleet, wait_for_more, wait_for_publications, Backing, Cluster,
};

const CLIENTS: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_gives_every_client_an_announced_resync() {
    let mut cluster = Cluster::start_on_sentinels(2).await;
    let members = fleet(&cluster.url, CLIENTS).await;
    wait_for_publications(&members, 5).await;

    let Backing::Sentinels(set) = &mut cluster.backing else {
        unreachable!("Sentinels")
    };
    let took = set.fail_over().await;
    tokio::time::timeout(Duration::from_secs(30), wait_for_more(&members, 10))
        .await
        .expect("the feed goes on on the promoted replica");
    for node in &cluster.nodes {
        assert!(
            node.logs_within(
                &["INFO", "PUB/SUB connection to Redis back"],
                Duration::from_secs(10)
            )
            .await,
            "node {} found the new primary",
            node.port
        );
    }
    finish_resynced(members, "what the old primary may not have replicated").await;
    eprintln!("failover (kill to +switch-master): {took:?}");
}
