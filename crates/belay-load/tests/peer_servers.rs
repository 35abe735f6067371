//! The peer benchmarks' load clients against the real Node servers of
//! peers/bench (socket.io 4.8.3 and ws 8.23.1, `npm ci` there when its
//! packages are missing), a few sessions each: the socket.io client holds
//! its sessions through engine.io pings, gets every echo acknowledged and
//! every publication of the room; the Belay JSON loads hold their sessions
//! through the ws server's protocol pings and get every publication.
//! Needs `node` and `npm` on the PATH.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use belay_load::loads::broadcast::{self, BroadcastConfig};
use belay_load::loads::echo::{self, EchoConfig};
use belay_load::loads::idle::{self, IdleConfig};
use belay_load::loads::socketio as socketio_load;
use belay_load::servers::child::ServerChild;
use belay_load::suites::peers::Peer;

/// peers/bench, its packages installed.
fn peers_bench() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../peers/bench");
    if !dir.join("node_modules/socket.io/package.json").exists() {
        let status = Command::new("npm")
            .args(["ci", "--silent", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm runs");
        assert!(status.success(), "npm ci in peers/bench failed");
    }
    dir
}

/// A Node server of `peer` with a 1 s heartbeat (ping, and the allowance
/// for the answer).
fn start(peer: Peer) -> (ServerChild, belay_load::clients::target::Target) {
    let dir = peers_bench();
    let command = peer.command(
        std::path::Path::new("unused: not a Rust server"),
        std::path::Path::new("node"),
        &dir.join("server.mjs"),
        1_000,
    );
    let server = ServerChild::start(command).expect("the Node server starts");
    let target = peer.target(server.addr).expect("a loopback target");
    (server, target)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socketio_client_holds_echoes_and_receives_against_socketio() {
    let (mut server, target) = start(Peer::Socketio);
    assert!(server.node_memory().expect("mem answered").heap_used > 0.0);

    // Idle: 2.5 s is two engine.io pings, each to be answered within 1 s.
    let fleet = socketio_load::open_idle(&target, &IdleConfig::new(5, Vec::new())).await;
    assert_eq!(
        (fleet.opened, fleet.failed),
        (5, 0),
        "{:?}",
        fleet.first_error
    );
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert_eq!(fleet.alive(), 5, "a session missed a pong");
    fleet.close().await;

    let config = EchoConfig {
        time_limit: Duration::from_secs(20),
        ..EchoConfig::new(3, 20)
    };
    let mut report = socketio_load::echo(&target, &config)
        .await
        .expect("the echo load runs");
    assert_eq!(report.first_error, None);
    assert_eq!((report.completed, report.failed), (60, 0));
    assert!(report.latencies.percentile(99.0).expect("samples") < Duration::from_secs(5));

    let config = BroadcastConfig {
        time_limit: Duration::from_secs(20),
        ..BroadcastConfig::new(5, 10, 100.0)
    };
    let report = socketio_load::broadcast(&target, &config)
        .await
        .expect("the broadcast load runs");
    assert_eq!(report.first_error, None);
    assert_eq!(report.subscribers, 5);
    assert_eq!((report.deliveries, report.expected), (50, 50));
    // Every publication carried the server's stamp.
    assert_eq!(report.latencies.len(), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_belay_json_loads_hold_echo_and_receive_against_the_ws_server() {
    let (_server, target) = start(Peer::Ws);

    // Idle: the ws README's heartbeat terminates a client that did not
    // answer the previous protocol ping, one interval (1 s) later.
    let fleet = idle::open(&target, &IdleConfig::new(5, Vec::new())).await;
    assert_eq!(
        (fleet.opened, fleet.failed),
        (5, 0),
        "{:?}",
        fleet.first_error
    );
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    assert_eq!(fleet.alive(), 5, "a session missed a protocol pong");
    fleet.close().await;

    let config = EchoConfig {
        time_limit: Duration::from_secs(20),
        ..EchoConfig::new(3, 20)
    };
    let report = echo::run(&target, &config)
        .await
        .expect("the echo load runs");
    assert_eq!(report.first_error, None);
    assert_eq!((report.completed, report.failed), (60, 0));

    let config = BroadcastConfig {
        time_limit: Duration::from_secs(20),
        ..BroadcastConfig::new(5, 10, 100.0)
    };
    let report = broadcast::run(&target, &config)
        .await
        .expect("the broadcast load runs");
    assert_eq!(report.first_error, None);
    assert_eq!((report.deliveries, report.expected), (50, 50));
    assert_eq!(report.latencies.len(), 50);
}
