//! `belay lab` with the real peers as clients (peers/lab): socket.io-client
//! with its defaults and tuned as its docs recommend (against the lab's
//! socket.io app), partysocket and reconnecting-websocket (under a minimal
//! Belay-protocol app against `belay serve --demo`), in Node, through one
//! repetition of two faults. The peers are not held to Belay's guarantees:
//! the test checks that each agent ran and reported what the lab measures
//! (readiness, publications, requests issued and settled, reconnect dials).
//! It installs peers/lab's npm packages (`npm ci`) if they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use belay_lab::lab::{self, ClientKind, LabConfig, LabFault, LabTransport};

/// peers/lab, with its packages installed.
fn peers_lab() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers/lab");
    if !dir.join("node_modules/socket.io-client").exists() {
        let status = Command::new("npm")
            .args(["ci", "--silent", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm is needed for the peers (Node.js 20)");
        assert!(status.success(), "npm ci in peers/lab failed");
    }
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peers_run_as_lab_agents_and_report_what_the_lab_measures() {
    let dir = peers_lab();
    let mut config = LabConfig::default();
    config.clients = vec![
        ClientKind::SocketIo,
        ClientKind::SocketIoTuned,
        ClientKind::PartySocket,
        ClientKind::Rws,
    ];
    config.faults = vec![LabFault::Freeze, LabFault::Restart];
    config.transports = vec![LabTransport::WebSocket];
    config.reps = 1;
    config.jobs = 3;
    config.time_bound = Duration::from_secs(300);
    config.server.exe = env!("CARGO_BIN_EXE_belay").into();
    config.server.socketio_script = dir.join("server.mjs");
    config.browser.peer_agent = dir.join("agent.mjs");
    let report = lab::run(&config, |_| {}).await;
    let text = lab::markdown(
        &report,
        "cargo test -p belay-cli --test lab_peers",
        "test machine",
    );
    println!("{text}");

    assert_eq!(report.cells.len(), 8, "2 faults × 4 peers");
    for cell in &report.cells {
        let name = format!("{} × {}", cell.fault, cell.client);
        let f = match &cell.reps[..] {
            [Ok(f)] => f,
            other => panic!("{name}: {other:?}"),
        };
        // It became ready and received the feed (the lab waits for both
        // before the fault), issued requests and saw them settle.
        assert!(f.requests >= 10, "{name}: {} requests due", f.requests);
        assert!(f.settled > 0, "{name}: no request settled");
        assert!(f.ready_after.is_some(), "{name}: not ready after the fault");
        assert!(
            f.server_connections_after.is_some(),
            "{name}: the server's connection count was read"
        );
        if cell.fault == LabFault::Restart {
            // Every session was dropped: each client noticed and dialled again.
            assert!(f.detection.is_some(), "{name}: the restart went unnoticed");
            assert!(f.dials_since_fault >= 1, "{name}: no reconnect dial");
            assert!(f.data_after.is_some(), "{name}: no publication after it");
        }
    }
    // The tuned socket.io (1 s heartbeat) notices a freeze through its
    // pings; with socket.io's defaults (25 s + 20 s) the 3 s freeze passes.
    let tuned = report
        .cells
        .iter()
        .find(|c| c.fault == LabFault::Freeze && c.client == ClientKind::SocketIoTuned)
        .and_then(|c| c.reps[0].as_ref().ok())
        .expect("freeze × socketio-tuned");
    assert!(
        tuned.detection.is_some_and(|d| d < config.fault_for),
        "socketio-tuned detects the freeze while it lasts: {:?}",
        tuned.detection
    );
    assert!(text.contains("* Peers (not held to Belay's guarantees"));
}
