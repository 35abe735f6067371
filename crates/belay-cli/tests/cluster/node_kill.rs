//! A node killed with SIGKILL: no drain, no goodbye. Its clients notice
//! the closed connection, HAProxy stops routing to it, and they resume on
//! the other node with every publication, none twice, no Resync. Requests
//! in flight on the dead node settle as `ConnectionClosed` (never hang);
//! a keyed request it ran is answered from the stored outcome when retried
//! on the other node, not run again.

use std::time::Duration;

use belay_client::{Client, RequestOptions};
use serde_json::{json, Value};

use crate::harness::{finish, fleet, wait_for_more, wait_for_publications, Cluster};

const CLIENTS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_s_clients_resume_on_the_other_and_a_keyed_retry_is_not_run_twice() {
    let mut cluster = Cluster::start(2).await;
    let members = fleet(&cluster.url, CLIENTS).await;
    wait_for_publications(&members, 5).await;

    // An order placed directly on node A, just before it dies.
    let direct = Client::builder(cluster.direct[0].clone())
        .connect()
        .expect("a usable URL");
    direct.ready().await.expect("connected to node A");
    let keyed = || RequestOptions::default().idempotency_key("order-after-kill");
    let first: Value = direct
        .request_with("order.create", json!("book"), keyed())
        .await
        .expect("node A answers")
        .parse()
        .expect("JSON");
    let node_a = cluster.nodes[0].child.id().expect("node A runs");
    assert_eq!(first["node"], json!(node_a));
    direct.close().await;

    cluster.nodes[0]
        .signal_and_wait("KILL", Duration::from_secs(5))
        .await;
    wait_for_more(&members, 10).await;

    // The retry reaches node B (A is gone): the stored outcome, A's.
    let retrying = Client::builder(cluster.url.clone())
        .connect()
        .expect("a usable URL");
    retrying.ready().await.expect("connected through HAProxy");
    let retry: Value = retrying
        .request_with("order.create", json!("book"), keyed())
        .await
        .expect("answered")
        .parse()
        .expect("JSON");
    assert_eq!(
        retry, first,
        "the outcome node A stored, not a second order"
    );
    retrying.close().await;

    let (mut moved, mut cut) = (0, 0);
    for seen in finish(members).await {
        if seen.sessions > 1 {
            moved += 1;
        }
        cut += seen.requests_cut;
        assert_eq!(seen.resyncs(), 0, "no Resync: {seen:?}");
        assert_eq!(seen.requests_failed, 0, "{:?}", seen.errors);
        seen.without_silent_gaps()
            .expect("one epoch, every offset once");
    }
    eprintln!("{moved} of {CLIENTS} clients opened a new session; {cut} requests cut by the kill");
    assert!(moved > 0, "some clients were on node A and moved");
    // A request in flight when A died cannot be answered: one per client
    // that was on A, at most.
    assert!(cut <= moved, "{cut} requests cut by {moved} moves");
}
