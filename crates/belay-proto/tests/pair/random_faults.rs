//! Random interleavings of client commands, server closes and drains, and
//! link faults never break the invariants of client and server together:
//! at most one live transport; every request settles exactly once; no
//! publication is delivered twice or skipped without a `RecoveryFailed`;
//! once the link is healthy and reaping has run, the server holds at most
//! one connection for the client.

use std::collections::{BTreeMap, BTreeSet};
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

/// Per channel, the offsets delivered since the last resync must rise by
/// exactly one (within an epoch); a gap or repeat needs a `RecoveryFailed`
/// (or a new subscription after an unsubscribe) first.
fn check_streams(pair: &Pair) -> Result<(), TestCaseError> {
    let mut last: BTreeMap<String, (String, u64)> = BTreeMap::new();
    for (at, event) in pair.events(C) {
        match event {
            Event::Publication(p) => {
                if let Some((epoch, offset)) = last.get(&p.channel) {
                    prop_assert!(
                        *epoch == p.epoch && p.offset == offset + 1,
                        "{} at {at:?}: offset {} after {offset} without a resync",
                        p.channel,
                        p.offset
                    );
                }
                last.insert(p.channel.clone(), (p.epoch.clone(), p.offset));
            }
            Event::RecoveryFailed { channel } => {
                last.remove(channel);
            }
            Event::Subscribed {
                channel,
                recovered: false,
            } => {
                // A fresh subscription (no position) starts at the top.
                last.remove(channel);
            }
            _ => {}
        }
    }
    Ok(())
}

fn run(ops: Vec<Op>, seed: u64) -> Result<(), TestCaseError> {
    let mut pair = Pair::new(Config::default(), seed);
    pair.command(C, |s, now| s.start(now)).unwrap();
    let mut issued: BTreeSet<RequestId> = BTreeSet::new();
    let mut next = [1u64; CHANNELS.len()];
    for op in ops {
        let now = pair.now();
        match op {
            Op::Subscribe(c) => {
                let _ = pair.client_mut(C).session.subscribe(now, CHANNELS[c]);
            }
            Op::Unsubscribe(c) => {
                let _ = pair.client_mut(C).session.unsubscribe(now, CHANNELS[c]);
            }
            Op::Request => {
                let call = Call::new("echo", Payload::from(7));
                if let Ok(id) = pair.client_mut(C).session.request(now, call) {
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
    let mut settled: BTreeMap<RequestId, usize> = BTreeMap::new();
    for (_, event) in pair.events(C) {
        if let Event::Response { id, .. } = event {
            *settled.entry(*id).or_default() += 1;
        }
    }
    for id in &issued {
        prop_assert_eq!(settled.get(id).copied(), Some(1), "request {:?}", id);
    }
    prop_assert!(settled.keys().all(|id| issued.contains(id)));
    check_streams(&pair)
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
