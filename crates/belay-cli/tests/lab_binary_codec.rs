//! `belay lab --codec binary` end to end: the Belay Rust client on the
//! binary codec (spec/PROTOCOL.md §1.8) keeps every guarantee through a
//! sample of faults against real `belay serve --demo` processes, and every
//! connection it became ready on spoke `belay.bin.1`.

use std::time::Duration;

use belay_lab::lab::{self, ClientKind, LabConfig, LabFault, LabTransport};
use belay_proto::message::Codec;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_codec_keeps_every_guarantee_through_a_fault_round() {
    let mut config = LabConfig::default();
    config.clients = vec![ClientKind::Belay];
    config.transports = vec![LabTransport::WebSocket];
    config.faults = vec![
        LabFault::Freeze,
        LabFault::ServiceDown,
        LabFault::Restart,
        LabFault::Drain,
    ];
    config.work.codec = Codec::Binary;
    config.reps = 1;
    config.jobs = 2;
    config.time_bound = Duration::from_secs(300);
    config.server.exe = env!("CARGO_BIN_EXE_belay").into();
    let report = lab::run(&config, |_| {}).await;
    let text = lab::markdown(
        &report,
        "cargo test -p belay-cli --test lab_binary_codec",
        "test machine",
    );
    println!("{text}");
    assert_eq!(report.cells.len(), 4);
    for cell in &report.cells {
        assert_eq!(cell.reps.len(), 1, "{} ran", cell.fault);
        let shortfalls = cell.shortfalls(&config);
        assert!(shortfalls.is_empty(), "{}: {shortfalls:?}", cell.fault);
        let Ok(figures) = &cell.reps[0] else {
            panic!("{}: {:?}", cell.fault, cell.reps[0])
        };
        assert_eq!(figures.websocket_codecs, ["binary"], "{}", cell.fault);
    }
    assert!(text.contains("**binary** for Belay's clients"));
    assert!(text.contains("All kept."));
}
