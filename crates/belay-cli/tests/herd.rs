//! A tiny herd with real processes (herd-bench's run, docs/HERD.md): 200
//! real clients on full jitter against `belay serve` with an injected
//! handshake cost and one worker thread; the server is killed, stays down
//! 2 s, and a new one comes back on the same port. Every client must be
//! back, and the counts must agree with each other and with the server's.

use std::path::PathBuf;
use std::time::Duration;

use belay_load::suites::herd::{self, HerdConfig, ServeSettings};
use belay_sim::policy::select_cases;

const CLIENTS: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_fleet_comes_back_after_a_killed_server_and_the_counts_agree() {
    let case = select_cases(Some("full_jitter"))
        .expect("a named policy")
        .remove(0);
    let config = HerdConfig {
        serve: ServeSettings {
            belay: PathBuf::from(env!("CARGO_BIN_EXE_belay")),
            accept_rate: 100.0,
            expected_clients: CLIENTS,
            worker_threads: 1,
            handshake_cost_us: 200,
            session_cost_us: 50,
            max_pending_upgrades: 2_048,
            cpus: None,
            broker: None,
        },
        clients: CLIENTS,
        policy: case.name,
        client_config: case.config,
        down: Duration::from_secs(2),
        horizon: Duration::from_secs(60),
        ramp_rate: 200.0,
        settle: Duration::ZERO,
        seed: 1,
    };
    let report = herd::run(&config).await.expect("the run completes");
    let f = &report.figures;
    let json = report.to_json();
    let n = CLIENTS as u64;

    assert_eq!(f.noticed, n, "every client noticed the kill: {json}");
    let all = f.t100.expect("every client is back within the horizon");
    let (t50, t99) = (f.t50.expect("half back"), f.t99.expect("99 % back"));
    assert!(report.up_after >= config.down, "{json}");
    assert!(report.up_after <= t50 && t50 <= t99 && t99 <= all, "{json}");
    assert!(
        all <= report.ended_after && report.ended_after - all < Duration::from_secs(1),
        "the run ends when all are back: {json}"
    );
    assert_eq!(f.connected_at_end, n);
    assert!(!report.metastable());

    // Each client dialed the new server (a dial made while it was starting
    // may reach it: the client counts it before the return).
    assert!(
        f.attempts_after_return + f.attempts_while_starting >= n,
        "{json}"
    );
    assert_eq!(
        f.attempts_total,
        f.attempts_while_down + f.attempts_after_return
    );
    assert!(f.peak_after_return >= 1 && f.peak_after_return <= f.attempts_after_return);
    assert_eq!(f.attempts_per_s.iter().sum::<u64>(), f.attempts_total);
    assert_eq!(f.connected_per_s.last(), Some(&n));

    // The new server admitted each client once, and saw every dial that
    // reached it pay the handshake cost (a dial in flight when it came up
    // may be counted by the client just before the return).
    assert_eq!(report.server.connects, Some(n as f64), "{json}");
    let handshakes = report.server.handshakes.expect("the cost counters");
    assert!(
        handshakes >= n as f64 && handshakes <= f.attempts_total as f64,
        "{json}"
    );
    let refused = report.server.admission_refusals.expect("the metrics");
    assert_eq!(handshakes, n as f64 + refused, "admitted + refused: {json}");
    assert!(report.recovery.server_cpu > Duration::ZERO);
}

/// The same outage with two nodes on a real Redis behind a real HAProxy
/// (`herd-bench --nodes 2`): 400 clients of Belay's default policy, each
/// node admitting 100/s, both nodes killed and back after 1 s. The fleet is
/// back, each client admitted once, both nodes take a share, and the slots
/// keep the nodes under their rate: few refusals (a fleet that came back at
/// once would see hundreds). Time bounds are generous: the machine may be
/// loaded (an idle run: 3.9 s against the 3 s bound, no refusal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_behind_haproxy_comes_back_to_both_nodes_at_their_rate() {
    const FLEET: usize = 400;
    let case = select_cases(Some("belay-default"))
        .expect("a named policy")
        .remove(0);
    let config = HerdConfig {
        serve: ServeSettings {
            belay: PathBuf::from(env!("CARGO_BIN_EXE_belay")),
            accept_rate: 100.0,
            expected_clients: FLEET,
            worker_threads: 1,
            handshake_cost_us: 0,
            session_cost_us: 0,
            max_pending_upgrades: 2_048,
            cpus: None,
            broker: None,
        },
        clients: FLEET,
        policy: case.name,
        client_config: case.config,
        down: Duration::from_secs(1),
        horizon: Duration::from_secs(60),
        ramp_rate: 150.0,
        settle: Duration::from_secs(2),
        seed: 1,
    };
    let report = herd::cluster::run(&config, 2)
        .await
        .expect("the run completes");
    let json = report.to_json();
    let all = report.figures.t100.expect("every client is back");
    assert!(all >= config.down, "{json}");
    assert!(all <= report.bound * 4, "{json}");
    assert_eq!(report.per_node.len(), 2);
    let accepted: f64 = report.per_node.iter().map(|n| n.accepted).sum();
    assert_eq!(accepted, FLEET as f64, "each client admitted once: {json}");
    let refused: f64 = report.per_node.iter().map(|n| n.refused).sum();
    assert!(refused <= FLEET as f64 / 10.0, "paced, not refused: {json}");
    for node in &report.per_node {
        assert!(
            node.accepted >= FLEET as f64 / 4.0,
            "both nodes take a share: {json}"
        );
    }
}
