//! `belay lab` end to end: one repetition of every fault for the naive
//! baseline and the Belay Rust client, against real `belay serve --demo`
//! processes (the link cut in a network namespace: needs root, as in CI;
//! the cluster faults on a real redis-server behind a real HAProxy, which
//! the test command installs; the resident host's node killed for the
//! Belay client only); and of every single-server fault for the
//! Belay client with WebSockets blocked throughout (over the SSE fallback).
//!
//! The Belay client must keep every guarantee; the naive baseline must show
//! the gaps the seed's first row shows.

use std::time::Duration;

use belay_lab::lab::{self, Cell, ClientKind, LabConfig, LabFault, LabTransport, RepFigures};

fn config() -> LabConfig {
    let mut config = LabConfig::default();
    config.clients = vec![ClientKind::Naive, ClientKind::Belay];
    config.transports = vec![LabTransport::WebSocket, LabTransport::Sse];
    config.reps = 1;
    config.jobs = 3;
    config.flapping_for = Duration::from_secs(5);
    config.time_bound = Duration::from_secs(600);
    config.server.exe = env!("CARGO_BIN_EXE_belay").into();
    config
}

fn cell(report: &lab::LabReport, fault: LabFault, client: ClientKind) -> &Cell {
    report
        .cells
        .iter()
        .find(|c| c.fault == fault && c.client == client && c.transport == LabTransport::WebSocket)
        .expect("a cell for every fault and client")
}

fn figures(cell: &Cell) -> &RepFigures {
    match &cell.reps[..] {
        [Ok(f)] => f,
        other => panic!("{} × {}: {other:?}", cell.fault, cell.client),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn belay_keeps_every_guarantee_and_the_naive_baseline_shows_the_gaps() {
    let config = config();
    let report = lab::run(&config, |_| {}).await;
    let text = lab::markdown(
        &report,
        "cargo test -p belay-cli --test lab",
        "test machine",
    );
    println!("{text}");

    for c in report
        .cells
        .iter()
        .filter(|c| c.client == ClientKind::Belay)
    {
        assert_eq!(c.reps.len(), 1, "{} ran", c.fault);
        let shortfalls = c.shortfalls(&config);
        assert!(
            shortfalls.is_empty(),
            "{} × belay over {}: {shortfalls:?}",
            c.fault,
            c.transport
        );
    }
    let over_sse = report
        .cells
        .iter()
        .filter(|c| c.transport == LabTransport::Sse)
        .count();
    assert_eq!(
        over_sse, 10,
        "every single-server fault over the fallback, Belay only"
    );
    assert!(
        text.contains("All kept."),
        "the report says every guarantee was kept"
    );

    // The seed's first row: a naive client does not notice a freeze while
    // it lasts (only when it ends and the close the server sent after
    // reaping it gets through), nor a service that went away, and leaves
    // requests hanging.
    let naive_freeze = figures(cell(&report, LabFault::Freeze, ClientKind::Naive));
    assert!(
        !matches!(naive_freeze.detection, Some(detected) if detected < config.fault_for),
        "naive does not detect a freeze while it lasts: {:?}",
        naive_freeze.detection
    );
    let naive_down = figures(cell(&report, LabFault::ServiceDown, ClientKind::Naive));
    assert_eq!(
        naive_down.detection, None,
        "naive never sees the service go"
    );
    assert_eq!(
        naive_down.data_after, None,
        "naive gets no data after the service returns"
    );
    assert!(
        naive_down.lost_silently > 0,
        "naive loses publications silently"
    );
    let naive_slow = figures(cell(&report, LabFault::SlowReplies, ClientKind::Naive));
    assert!(
        naive_slow.settled < naive_slow.requests,
        "naive leaves requests hanging"
    );

    // WebSockets blocked: Belay carries on over SSE and comes back.
    let blocked = figures(cell(&report, LabFault::WebsocketBlocked, ClientKind::Belay));
    assert_eq!(blocked.transports, ["websocket", "sse", "websocket"]);

    // And Belay where the naive client fails.
    let belay_down = figures(cell(&report, LabFault::ServiceDown, ClientKind::Belay));
    assert!(belay_down
        .detection
        .is_some_and(|d| d < Duration::from_secs(1)));
    assert!(belay_down
        .data_after
        .is_some_and(|d| d < Duration::from_secs(2)));
    let belay_slow = figures(cell(&report, LabFault::SlowReplies, ClientKind::Belay));
    assert_eq!(belay_slow.settled, belay_slow.requests);

    // In the cluster (the shortfalls above already hold Belay to a resume
    // without resync after a deploy, a kill or Redis down, and to an
    // announced resync after Redis restarted empty): a naive client, which
    // never resubscribes after `unavailable`, loses the feed silently when
    // Redis goes away, where Belay resumes from its position.
    let naive_redis = figures(cell(&report, LabFault::RedisDown, ClientKind::Naive));
    assert!(
        naive_redis.lost_silently > 0,
        "naive loses publications silently through redis-down"
    );
    let belay_redis = figures(cell(&report, LabFault::RedisDown, ClientKind::Belay));
    assert!(belay_redis.data_after.is_some(), "Belay's feed goes on");
    let belay_restart = figures(cell(&report, LabFault::RedisRestart, ClientKind::Belay));
    assert!(belay_restart.resyncs >= 1, "the lost history is announced");
    let belay_failover = figures(cell(&report, LabFault::SentinelFailover, ClientKind::Belay));
    assert!(
        belay_failover.resyncs >= 1,
        "what the old primary may not have replicated is announced"
    );
    assert!(belay_failover.data_after.is_some(), "Belay's feed goes on");
    let belay_durable = figures(cell(
        &report,
        LabFault::SentinelFailoverWait,
        ClientKind::Belay,
    ));
    assert_eq!(
        belay_durable.resyncs, 0,
        "with wait_replicas the promoted replica has everything the client saw"
    );
    assert_eq!(belay_durable.lost_silently, 0);
    assert!(belay_durable.data_after.is_some(), "Belay's feed goes on");

    // A resident host's node killed with calls in flight (Belay's clients
    // only: the naive one has neither tokens nor `$call`): the calls it
    // caught settle `host_lost` or are answered from the host's new node,
    // never left to their deadline, and the host answers again.
    assert!(
        !report
            .cells
            .iter()
            .any(|c| c.fault == LabFault::HostNodeKill && c.client == ClientKind::Naive),
        "no naive cell for the hosted fault"
    );
    let hosted = figures(cell(&report, LabFault::HostNodeKill, ClientKind::Belay));
    assert!(hosted.in_flight_at_fault > 0, "{hosted:?}");
    assert!(hosted.in_flight_host_lost > 0, "{hosted:?}");
    assert_eq!(hosted.in_flight_otherwise, 0, "{hosted:?}");
    assert!(hosted.answered_after.is_some(), "{hosted:?}");
}
