//! Random interleavings of client commands, server closes and drains, and
//! link faults never break the invariants of client and server together
//! (the pair checks every one after every step: `belay_proto::testing::
//! invariants`); after the link heals every request has settled, the client
//! is ready again, and once reaping has run the server holds at most one
//! connection for it.

use std::collections::BTreeSet;
use std::time::Duration;

use belay_proto::message::Payload;
use belay_proto::testing::Pair;
use belay_proto::{Call, CloseCode, Config, Event, RequestId};

use crate::support::C;
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngAlgorithm, RngSeed, TestRunner};

const CHANNELS: [&str; 2] = ["a", "b"];

#[derive(Debug, Clone)]
enum Op {
    Subscribe(usize),
    Unsubscribe(usize),
    Request,
    Publish(usize),
    Freeze,
    FreezeDown,
    Cut,
    Heal,
    Loss(u8),
    ServerClose,
    Drain,
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..CHANNELS.len()).prop_map(Op::Subscribe),
        1 => (0..CHANNELS.len()).prop_map(Op::Unsubscribe),
        3 => Just(Op::Request),
        4 => (0..CHANNELS.len()).prop_map(Op::Publish),
        1 => Just(Op::Freeze),
        1 => Just(Op::FreezeDown),
        1 => Just(Op::Cut),
        2 => Just(Op::Heal),
        1 => (0u8..30).prop_map(Op::Loss),
        1 => Just(Op::ServerClose),
        1 => Just(Op::Drain),
        6 => (1u16..30_000).prop_map(Op::Wait),
    ]
}

fn run(ops: Vec<Op>, seed: u64) -> Result<(), TestCaseError> {
    let mut pair = Pair::new(Config::default(), seed);
    pair.command(C, |s, now| s.start(now)).unwrap();
    let mut issued: BTreeSet<RequestId> = BTreeSet::new();
    let mut next = [1u64; CHANNELS.len()];
    for op in ops {
        match op {
            Op::Subscribe(c) => {
                let _ = pair.command(C, |s, now| s.subscribe(now, CHANNELS[c]));
            }
            Op::Unsubscribe(c) => {
                let _ = pair.command(C, |s, now| s.unsubscribe(now, CHANNELS[c]));
            }
            Op::Request => {
                let call = Call::new("echo", Payload::from(7));
                if let Ok(id) = pair.command(C, |s, now| s.request(now, call)) {
                    issued.insert(id);
                }
            }
            Op::Publish(c) => {
                pair.publish(CHANNELS[c], serde_json::json!(next[c]));
                next[c] += 1;
            }
            Op::Freeze => pair.client_mut(C).link.freeze(),
            Op::FreezeDown => pair.client_mut(C).link.down_frozen = true,
            Op::Cut => pair.client_mut(C).link.cut = true,
            Op::Heal => {
                pair.client_mut(C).link.heal();
                pair.client_mut(C).link.loss = 0.0;
            }
            Op::Loss(percent) => pair.client_mut(C).link.loss = f64::from(percent) / 100.0,
            Op::ServerClose => pair.close_server_connections(CloseCode::GOING_AWAY, "restart"),
            Op::Drain => pair.drain_server(Duration::from_secs(2)),
            Op::Wait(ms) => pair.run_for(Duration::from_millis(u64::from(ms))),
        }
        pair.run_for(Duration::from_millis(1));
        prop_assert!(
            pair.client(C).max_open_transports <= 1,
            "two live transports"
        );
    }
    // Heal everything and give reconnects, requests and reaping their time:
    // the longest backoff step, a connect timeout, the server's ping
    // interval plus its pong timeout.
    pair.client_mut(C).link.heal();
    pair.client_mut(C).link.loss = 0.0;
    pair.run_for(Duration::from_secs(150));
    prop_assert!(
        pair.client(C).max_open_transports <= 1,
        "two live transports"
    );
    prop_assert!(
        pair.client(C).session.is_ready(),
        "ready again once the link heals"
    );
    prop_assert!(
        pair.server_connections() <= 1,
        "{} server connections for one client",
        pair.server_connections()
    );
    if let Err(violation) = pair.check_requests_settled() {
        return Err(TestCaseError::fail(violation.to_string()));
    }
    let settled = pair.client(C).invariants().unsettled();
    prop_assert!(settled.is_empty(), "{:?} unsettled", settled);
    let answered = |id: &RequestId| {
        let mut events = pair.events(C).iter();
        events.any(|(_, e)| matches!(e, Event::Response { id: r, .. } if r == id))
    };
    prop_assert!(
        issued.iter().all(answered),
        "a request without its response"
    );
    Ok(())
}

#[test]
fn random_faults_never_break_the_pair_invariants() {
    let base = ProptestConfig::default();
    let config = ProptestConfig {
        // At least 1,000 cases, as every property of the project.
        cases: base.cases.max(1000),
        failure_persistence: None,
        rng_seed: match base.rng_seed {
            RngSeed::Random => RngSeed::Fixed(0xBE1A_7001),
            seed => seed,
        },
        rng_algorithm: RngAlgorithm::XorShift,
        ..base
    };
    let mut runner = TestRunner::new(config);
    let strategy = (prop::collection::vec(op(), 1..40), any::<u64>());
    if let Err(failure) = runner.run(&strategy, |(ops, seed)| run(ops, seed)) {
        panic!("{failure}");
    }
}
