//! The relay's record of a host: needed, and the state clients see.

use std::time::Duration;

use belay_proto::host::{HostRecord, HostState, HostTiming};
use belay_proto::Instant;

fn at(secs: u64) -> Instant {
    Instant::from_millis(secs * 1_000)
}

#[test]
fn a_host_nobody_wants_is_asleep_and_not_needed() {
    let timing = HostTiming::default();
    let record = HostRecord::new(at(0));
    assert!(!record.needed(at(1), &timing));
    assert_eq!(record.state(at(1), &timing), HostState::Asleep);
}

#[test]
fn a_call_makes_it_needed_and_waking_until_its_session_attaches() {
    let timing = HostTiming::default();
    let mut record = HostRecord::new(at(0));
    record.handle_call_started();
    assert!(record.needed(at(1), &timing));
    assert_eq!(record.state(at(1), &timing), HostState::Waking);
    record.handle_attached();
    assert_eq!(record.state(at(2), &timing), HostState::Ready);
}

#[test]
fn it_stays_needed_for_the_grace_after_the_last_call() {
    let timing = HostTiming::default().with_grace(Duration::from_secs(60));
    let mut record = HostRecord::new(at(0));
    record.handle_call_started();
    record.handle_call_ended(at(10));
    assert!(record.needed(at(69), &timing));
    assert!(!record.needed(at(70), &timing));
}

#[test]
fn a_subscriber_keeps_it_needed() {
    let timing = HostTiming::default();
    let mut record = HostRecord::new(at(0));
    record.handle_subscribed();
    assert!(record.needed(at(1_000), &timing));
    record.handle_unsubscribed();
    assert!(!record.needed(at(1_000), &timing));
}

#[test]
fn a_host_that_stopped_beating_is_offline_and_forgettable() {
    let timing = HostTiming::default().with_heartbeat_interval(Duration::from_secs(15));
    let mut record = HostRecord::new(at(0));
    record.handle_beat(at(15));
    assert_eq!(record.state(at(59), &timing), HostState::Asleep);
    assert_eq!(record.state(at(60), &timing), HostState::Offline);
    assert!(record.is_forgettable(at(60), &timing));
    record.handle_attached();
    assert_eq!(
        record.state(at(600), &timing),
        HostState::Ready,
        "a session is proof enough"
    );
    assert!(!record.is_forgettable(at(600), &timing));
}

#[test]
fn the_wake_bound_is_one_interval_plus_the_connect_allowance() {
    let timing = HostTiming::default()
        .with_heartbeat_interval(Duration::from_secs(15))
        .with_connect_allowance(Duration::from_secs(5));
    assert_eq!(timing.wake_bound(), Duration::from_secs(20));
    assert_eq!(
        timing.call_deadline(Duration::from_secs(10)),
        Duration::from_secs(30)
    );
}
