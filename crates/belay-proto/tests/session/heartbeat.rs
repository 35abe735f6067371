//! The heartbeat: a quiet connection is probed and dropped when the probe
//! goes unanswered, a busy one is not probed, and a server that pings is
//! answered and watched instead.

use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_proto::heartbeat::LivenessFailure;
use belay_proto::message::{ClientMessage, ServerMessage};
use belay_proto::{CloseCode, Config, ConnectionState, DisconnectReason, Event, Input, Instant};

use crate::common::{closes, events, sent, welcome, Driver};

#[test]
fn a_silent_peer_is_probed_then_dropped_within_interval_plus_timeout() {
    let mut config = Config::default();
    config
        .set_backoff(BackoffPolicy::fixed(Duration::from_secs(1)))
        .set_probe_interval(Duration::from_secs(10))
        .set_probe_timeout(Duration::from_secs(25));
    let mut d = Driver::new(config);
    let id = d.start();
    d.establish(id);
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(10_000));
    assert_eq!(sent(&out), vec![ClientMessage::Ping]);
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(35_000));
    assert_eq!(closes(&out), vec![(id, CloseCode::HEARTBEAT_TIMEOUT)]);
    assert!(matches!(
        events(&out)
            .iter()
            .find(|e| matches!(e, Event::Disconnected { .. })),
        Some(Event::Disconnected {
            reason: DisconnectReason::HeartbeatTimeout {
                cause: LivenessFailure::ProbeUnanswered
            },
            ..
        })
    ));
    // It does not wait for the dead socket's close event to move on.
    assert_eq!(d.session.state(), ConnectionState::Waiting);
}

#[test]
fn a_busy_connection_sends_no_probes() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    for step in 1..=100 {
        d.at(step * 5_000);
        d.tick();
        let out = d.server(id, ServerMessage::Pong);
        assert!(sent(&out).is_empty());
    }
    assert_eq!(d.session.stats().probes_sent, 0);
}

#[test]
fn server_pings_are_answered_and_their_absence_is_noticed() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.ping_interval_ms = Some(4_000);
    d.welcome(id, w);
    d.at(4_000);
    let out = d.input(Input::Frame(id, r#"{"type":"ping"}"#.into()));
    assert_eq!(sent(&out), vec![ClientMessage::Pong]);
    // Two intervals without any frame: dead.
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(12_000));
    assert!(events(&out).iter().any(|e| matches!(
        e,
        Event::Disconnected {
            reason: DisconnectReason::HeartbeatTimeout {
                cause: LivenessFailure::ServerPingsMissing
            },
            ..
        }
    )));
}

#[test]
fn a_zero_ping_interval_means_the_server_does_not_ping() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.ping_interval_ms = Some(0);
    d.welcome(id, w);
    let out = d.next_timeout();
    assert_eq!(
        d.now,
        Instant::from_millis(10_000),
        "the client probe, not a watchdog at 0"
    );
    assert_eq!(sent(&out), vec![ClientMessage::Ping]);
}

#[test]
fn a_connection_the_server_pings_sends_no_probes_of_its_own() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let mut w = welcome("s-1");
    w.ping_interval_ms = Some(10_000);
    d.welcome(id, w);
    for k in 1..=30 {
        // Server pings arrive up to 20 % late; the client only answers them.
        d.at(k * 12_000);
        let before = d.tick();
        let out = d.input(Input::Frame(id, r#"{"type":"ping"}"#.into()));
        assert!(sent(&before).is_empty());
        assert_eq!(sent(&out), vec![ClientMessage::Pong]);
    }
    assert_eq!(d.session.stats().probes_sent, 0);
    assert!(d.session.is_ready());
}
