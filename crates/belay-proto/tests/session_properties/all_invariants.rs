//! Every invariant at once, on one deterministic hand-written run through
//! the main paths.

use crate::support::{run, Checks, Fact, Msg, Op, ReqRef, Setup, Target};

/// One deterministic run through the main paths with every invariant on:
/// connect, subscribe, requests (answered, timed out, cut off), stale
/// inputs, advice, a deploy close, offline/online, a suspend, then stop.
#[test]
fn every_invariant_holds_on_a_hand_written_run() {
    let setup = Setup {
        policy: 8,
        max_attempts: Some(5),
        resubscribe: 3,
        seed: 7,
        start_at_once: true,
        reset_after_ms: 2_000,
        connect_timeout_ms: 3_000,
        probe_interval_ms: 5_000,
        probe_timeout_ms: 2_000,
        request_timeout_ms: 1_500,
        subscribe_timeout_ms: 1_000,
        online_delay_ms: 500,
    };
    let current = |fact| Op::Input(Target::Current, fact);
    let ops = vec![
        Op::Subscribe(0),
        Op::Establish(Some(25_000), Some((20_000, 3_000, Some(41_000)))),
        Op::ConfirmAll,
        Op::Request(None),
        Op::Request(Some(10_000)),
        current(Fact::Message(Msg::Response {
            request: ReqRef::InFlight(0),
            ok: true,
        })),
        Op::Advance(1_600),
        current(Fact::Message(Msg::Publication {
            channel: 0,
            other_epoch: false,
            step: 1,
        })),
        Op::Input(Target::Old(0), Fact::Message(Msg::Ping)),
        Op::Input(Target::Future(1), Fact::Opened),
        current(Fact::Message(Msg::Reconnect {
            reason: 0,
            min_ms: 1_000,
            max_ms: 2_000,
        })),
        current(Fact::Closed(Some(1012))),
        Op::ToPollTimeout,
        Op::Establish(None, None),
        Op::Network(false),
        current(Fact::Frame(Msg::Ping)),
        current(Fact::Closed(None)),
        Op::Network(true),
        Op::ToPollTimeout,
        current(Fact::Malformed(1)),
        Op::Suspend(3_600_000),
        Op::Earlier(1_000),
        Op::ToPollTimeout,
        Op::Stop,
        Op::Start,
        current(Fact::Opened),
        Op::Advance(10_000),
    ];
    let driver = run(&setup, &ops, Checks::all()).unwrap_or_else(|e| panic!("{e}"));
    assert!(driver.invariants.stopped());
    assert!(driver.invariants.unsettled().is_empty());
    let opened = driver.invariants.opened();
    assert!(opened.len() >= 3, "{opened:?}");
}
