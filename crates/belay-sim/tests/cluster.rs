//! Several nodes behind a balancer: every node plans its slots for the
//! cluster's capacity, so the fleet is back in about `D + N / (sum of the
//! nodes' rates)` and no node is asked for more than its own rate.

use std::time::Duration;

use belay_sim::policy::select_cases;
use belay_sim::scenario::outage::{run_outage, OutageRun, OutageSpec};
use belay_sim::server::{Balancer, ServerOptions};

/// The seed's outage (10,000 clients, 10 s down) on four nodes of 125/s:
/// the one server's 500/s, so the same bound, 10 + 10,000 / 500 = 30 s.
fn cluster_outage(balancer: Balancer) -> OutageRun {
    cluster_outage_with(balancer, false)
}

fn cluster_outage_with(balancer: Balancer, answer_503: bool) -> OutageRun {
    let mut spec = OutageSpec::seed_scenario();
    spec.server.answer_503 = answer_503;
    spec.server = ServerOptions::new(125);
    spec.server.nodes = 4;
    spec.server.balancer = balancer;
    spec.server.answer_503 = answer_503;
    let default = &select_cases(Some("belay-default")).unwrap()[0];
    run_outage(&spec, default, None)
}

fn assert_within_the_bound(run: &OutageRun, busiest_at_most: usize) {
    let all = run.metrics.to_100.expect("everyone back").as_secs_f64();
    assert!(all <= 30.0 * 1.1, "all connected at {all} s");
    assert_eq!(run.node_peaks.len(), 4);
    let busiest = *run.node_peaks.iter().max().unwrap();
    let quietest = *run.node_peaks.iter().min().unwrap();
    assert!(busiest <= busiest_at_most, "{:?}", run.node_peaks);
    // Every node does its share: the balancer spreads the whole fleet.
    assert!(quietest >= 100, "{:?}", run.node_peaks);
    assert!(
        run.metrics.attempts_per_client_after_return() <= 1.1,
        "{}",
        run.metrics.attempts_per_client_after_return()
    );
}

#[test]
fn round_robin_brings_the_fleet_back_at_the_clusters_rate() {
    let run = cluster_outage(Balancer::RoundRobin);
    assert_within_the_bound(&run, 125);
    assert!(
        (400..=500).contains(&run.metrics.peak_after_return),
        "{}",
        run.metrics.peak_after_return
    );
}

#[test]
fn a_random_balancer_bunches_but_the_fleet_is_still_back_in_time() {
    // Random picks bunch: a node's busiest second sees up to a quarter
    // more than its rate (binomial noise around 0.95 × 125 per second),
    // which the plan cannot help. With belay-server's answer to a refusal
    // (503, `Retry-After: 1`) the few refused come back 1–2 s later and
    // the fleet is in within the bound.
    let run = cluster_outage_with(Balancer::Random, true);
    assert_within_the_bound(&run, 125 * 13 / 10);
    // With the seed's free refusals (no `Retry-After`) a refused client
    // waits for its next slot, a whole period later.
    let free = cluster_outage(Balancer::Random);
    let all = free.metrics.to_100.expect("everyone back");
    assert!(all > Duration::from_secs(40), "{all:?}");
}

#[test]
fn equal_nodes_of_an_even_balancer_plan_the_same_alone() {
    // The cluster's fleet is taken as nodes × each node's, and the
    // cluster's rate is nodes × each node's: the same period as a node
    // planning alone. The cluster plan matters when the nodes' rates or
    // fleets differ (`ClusterCapacity`).
    let mut spec = OutageSpec::seed_scenario();
    spec.server = ServerOptions::new(125);
    spec.server.nodes = 4;
    spec.server.cluster_plan = false;
    let default = &select_cases(Some("belay-default")).unwrap()[0];
    let alone = run_outage(&spec, default, None);
    let planned = cluster_outage(Balancer::RoundRobin);
    assert_eq!(alone.metrics, planned.metrics);
    assert_eq!(alone.node_peaks, planned.node_peaks);
}
