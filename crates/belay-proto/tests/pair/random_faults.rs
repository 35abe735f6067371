//! Random interleavings of client commands, server closes, drops, advice
//! and drains, and link faults never break the invariants of clients and
//! server together (the pair checks every one after every step:
//! `belay_proto::testing::invariants`); after the links heal every request
//! has its one response, every client is ready again, and once reaping has
//! run the server holds one connection per client.

use std::collections::BTreeSet;
use std::time::Duration;

use belay_proto::message::{Payload, ReconnectAdvice};
use belay_proto::testing::{ClientId, Pair};
use belay_proto::{Call, CloseCode, Config, Event, RequestId};
use proptest::prelude::*;
use proptest::test_runner::{Config as ProptestConfig, RngAlgorithm, RngSeed, TestRunner};

const CHANNELS: [&str; 2] = ["a", "b"];

/// One step; `usize` picks a client (modulo the clients) or a channel.
#[derive(Debug, Clone)]
enum Op {
    Subscribe(usize, usize),
    Unsubscribe(usize, usize),
    Request(usize),
    Publish(usize),
    Freeze(usize),
    FreezeDown(usize),
    Cut(usize),
    Refuse(usize),
    Heal(usize),
    Loss(usize, u8),
    ServerClose,
    ServerDrop,
    Advise(bool),
    Drain,
    Wait(u16),
}

fn op() -> impl Strategy<Value = Op> {
    let client = 0..3usize;
    let channel = 0..CHANNELS.len();
    prop_oneof![
        3 => (client.clone(), channel.clone()).prop_map(|(c, ch)| Op::Subscribe(c, ch)),
        1 => (client.clone(), channel.clone()).prop_map(|(c, ch)| Op::Unsubscribe(c, ch)),
        3 => client.clone().prop_map(Op::Request),
        4 => channel.prop_map(Op::Publish),
        1 => client.clone().prop_map(Op::Freeze),
        1 => client.clone().prop_map(Op::FreezeDown),
        1 => client.clone().prop_map(Op::Cut),
        1 => client.clone().prop_map(Op::Refuse),
        2 => client.clone().prop_map(Op::Heal),
        1 => (client, 0u8..30).prop_map(|(c, p)| Op::Loss(c, p)),
        1 => Just(Op::ServerClose),
        1 => Just(Op::ServerDrop),
        1 => any::<bool>().prop_map(Op::Advise),
        1 => Just(Op::Drain),
        6 => (1u16..30_000).prop_map(Op::Wait),
    ]
}

fn run(clients: usize, ops: Vec<Op>, seed: u64) -> Result<(), TestCaseError> {
    let mut pair = Pair::new(Config::default(), seed);
    for n in 1..clients {
        pair.add_client(Config::default(), seed.wrapping_add(n as u64));
    }
    let ids: Vec<ClientId> = pair.client_ids().collect();
    for id in &ids {
        pair.command(*id, |s, now| s.start(now)).unwrap();
    }
    let pick = |n: usize| ids[n % ids.len()];
    let mut issued: BTreeSet<(ClientId, RequestId)> = BTreeSet::new();
    let mut next = [1u64; CHANNELS.len()];
    for op in ops {
        match op {
            Op::Subscribe(c, ch) => {
                let _ = pair.command(pick(c), |s, now| s.subscribe(now, CHANNELS[ch]));
            }
            Op::Unsubscribe(c, ch) => {
                let _ = pair.command(pick(c), |s, now| s.unsubscribe(now, CHANNELS[ch]));
            }
            Op::Request(c) => {
                let call = Call::new("echo", Payload::from(7));
                if let Ok(id) = pair.command(pick(c), |s, now| s.request(now, call)) {
                    issued.insert((pick(c), id));
                }
            }
            Op::Publish(ch) => {
                pair.publish(CHANNELS[ch], serde_json::json!(next[ch]));
                next[ch] += 1;
            }
            Op::Freeze(c) => pair.client_mut(pick(c)).link.freeze(),
            Op::FreezeDown(c) => pair.client_mut(pick(c)).link.down_frozen = true,
            Op::Cut(c) => pair.client_mut(pick(c)).link.cut = true,
            Op::Refuse(c) => pair.client_mut(pick(c)).link.refusing = true,
            Op::Heal(c) => {
                pair.client_mut(pick(c)).link.heal();
                pair.client_mut(pick(c)).link.loss = 0.0;
            }
            Op::Loss(c, percent) => {
                pair.client_mut(pick(c)).link.loss = f64::from(percent) / 100.0;
            }
            Op::ServerClose => pair.close_server_connections(CloseCode::GOING_AWAY, "restart"),
            Op::ServerDrop => pair.drop_server_connections(),
            Op::Advise(deploy) => pair.advise_clients(&ReconnectAdvice {
                reason: if deploy { "deploy" } else { "restart" }.into(),
                min_delay_ms: 500,
                max_delay_ms: 3_000,
                message: None,
            }),
            Op::Drain => pair.drain_server(Duration::from_secs(2)),
            Op::Wait(ms) => pair.run_for(Duration::from_millis(u64::from(ms))),
        }
        pair.run_for(Duration::from_millis(1));
    }
    // Heal everything and give reconnects, requests and reaping their time:
    // the longest backoff step, a connect timeout, the server's ping
    // interval plus its pong timeout.
    for id in &ids {
        pair.client_mut(*id).link.heal();
        pair.client_mut(*id).link.loss = 0.0;
    }
    pair.run_for(Duration::from_secs(150));
    for id in &ids {
        let client = pair.client(*id);
        prop_assert!(client.max_open_transports <= 1, "{id}: two live transports");
        prop_assert!(client.session.is_ready(), "{id}: ready again once healed");
        let held = pair.server_connections_of(*id);
        prop_assert!(held <= 1, "{id}: {held} server connections");
    }
    if let Err(violation) = pair.check_requests_settled() {
        return Err(TestCaseError::fail(violation.to_string()));
    }
    let answered = |(client, id): &(ClientId, RequestId)| {
        let mut events = pair.events(*client).iter();
        events.any(|(_, e)| matches!(e, Event::Response { id: r, .. } if r == id))
    };
    prop_assert!(
        issued.iter().all(answered),
        "a request without its response"
    );
    Ok(())
}

/// At least 1,000 cases, as every property of the project; a fixed seed.
fn check(clients: usize, seed: u32) {
    let base = ProptestConfig::default();
    let config = ProptestConfig {
        cases: base.cases.max(1000),
        failure_persistence: None,
        rng_seed: match base.rng_seed {
            RngSeed::Random => RngSeed::Fixed(u64::from(seed)),
            seed => seed,
        },
        rng_algorithm: RngAlgorithm::XorShift,
        ..base
    };
    let mut runner = TestRunner::new(config);
    let strategy = (prop::collection::vec(op(), 1..40), any::<u64>());
    if let Err(failure) = runner.run(&strategy, |(ops, seed)| run(clients, ops, seed)) {
        panic!("{failure}");
    }
}

#[test]
fn random_faults_never_break_the_invariants_of_one_client_and_the_server() {
    check(1, 0xBE1A_7001);
}

#[test]
fn random_faults_never_break_the_invariants_of_three_clients_and_the_server() {
    check(3, 0xBE1A_7003);
}
