//! A deploy: node A gets SIGTERM and drains; its clients move to node B
//! and resume with every publication, none twice, no Resync, and every
//! request sent answered (none cut by the close).

use std::time::Duration;

use crate::harness::{finish, fleet, wait_for_more, wait_for_publications, Cluster};

const CLIENTS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_node_hands_its_clients_to_the_other_without_loss() {
    let mut cluster = Cluster::start(2).await;
    let members = fleet(&cluster.url, CLIENTS).await;
    wait_for_publications(&members, 5).await;

    cluster.nodes[0]
        .signal_and_wait("TERM", Duration::from_secs(60))
        .await;
    wait_for_more(&members, 10).await;

    let (mut moved, mut not_sent, mut answered, mut cut) = (0, 0, 0, 0);
    for seen in finish(members).await {
        if seen.sessions > 1 {
            moved += 1;
        }
        not_sent += seen.requests_not_sent;
        answered += seen.requests_answered;
        cut += seen.requests_cut;
        assert_eq!(seen.resyncs(), 0, "no Resync: {seen:?}");
        assert_eq!(
            seen.requests_failed, 0,
            "no request lost: {:?}",
            seen.errors
        );
        assert!(seen.requests_answered > 0);
        seen.without_silent_gaps()
            .expect("one epoch, every offset once");
    }
    eprintln!(
        "{moved} of {CLIENTS} clients opened a new session; {answered} requests answered, \
         {not_sent} refused unsent, {cut} cut by the close"
    );
    assert!(moved > 0, "some clients were on node A and moved");
    // The client leaves an advised transport itself once its requests are
    // answered, so none is sent as the node's close frame leaves.
    assert_eq!(cut, 0, "no request cut by the drain");
}
