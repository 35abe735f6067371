//! `belay lab --clients python` end to end: the Python SDK (crates/belay-python,
//! its wheel installed in the venv `scripts/python-sdk-check.sh build` makes)
//! keeps every guarantee through a sample of faults against real
//! `belay serve --demo` processes, over WebSocket and over the SSE fallback.

use std::path::PathBuf;
use std::time::Duration;

use belay_lab::lab::{self, ClientKind, LabConfig, LabFault, LabTransport};

/// The workspace's target directory (CARGO_TARGET_DIR, or target/).
fn target_dir() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if PathBuf::from(&dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => root.join(dir),
        None => root.join("target"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_keeps_every_guarantee_through_a_fault_round() {
    let python = target_dir().join("python-sdk/venv/bin/python");
    assert!(
        python.exists(),
        "no Python SDK venv at {}: run scripts/python-sdk-check.sh build first (the test command does)",
        python.display()
    );
    let mut config = LabConfig::default();
    config.clients = vec![ClientKind::Python];
    config.transports = vec![LabTransport::WebSocket, LabTransport::Sse];
    config.faults = vec![LabFault::Freeze, LabFault::ServiceDown, LabFault::Restart];
    config.reps = 1;
    config.jobs = 2;
    config.time_bound = Duration::from_secs(300);
    config.server.exe = env!("CARGO_BIN_EXE_belay").into();
    config.browser.python = python;
    config.browser.python_agent =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../belay-python/lab/agent.py");
    let report = lab::run(&config, |_| {}).await;
    let text = lab::markdown(
        &report,
        "cargo test -p belay-cli --test lab_python",
        "test machine",
    );
    println!("{text}");
    assert_eq!(report.cells.len(), 6, "three faults over two transports");
    for cell in &report.cells {
        assert_eq!(cell.reps.len(), 1, "{} ran", cell.fault);
        let shortfalls = cell.shortfalls(&config);
        assert!(
            shortfalls.is_empty(),
            "{} over {}: {shortfalls:?}",
            cell.fault,
            cell.transport
        );
    }
    assert!(text.contains("All kept."));
}
