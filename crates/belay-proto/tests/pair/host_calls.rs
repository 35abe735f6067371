//! A resident host reached through the relay: a call to a host that holds
//! its calls channel is delivered there and settles with its answer; a
//! call to a host asleep makes it needed, and is delivered once it comes
//! back; past the wake bound it settles `host_asleep`.

use std::time::Duration;

use belay_proto::message::Payload;
use belay_proto::testing::{ClientId, Pair};
use belay_proto::{Call, Config, Event, RequestId, RequestOutcome};
use serde_json::json;

use crate::support::{outcome, start};

const HOST: &str = "pc-1";
const CALLS: &str = "$host-calls:pc-1";

/// A caller and a host client (not started), the host registered by its
/// first beat.
fn pair() -> (Pair, ClientId, ClientId) {
    let mut pair = Pair::without_clients(Default::default(), 91);
    let caller = pair.add_client(Config::default(), 91);
    let host = pair.add_client(Config::default(), 92);
    pair.set_host(host, HOST);
    pair.host_beat(HOST).expect("registered");
    start(&mut pair, caller, &[]);
    (pair, caller, host)
}

/// The calls the host was delivered: (call id, method).
fn deliveries(pair: &Pair, host: ClientId) -> Vec<(u64, String)> {
    pair.events(host)
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Publication(p) if p.channel == CALLS => {
                let d: serde_json::Value = serde_json::from_str(p.data.get()).ok()?;
                Some((d["call"].as_u64()?, d["method"].as_str()?.to_owned()))
            }
            _ => None,
        })
        .collect()
}

fn call(pair: &mut Pair, caller: ClientId) -> RequestId {
    let params = json!({"host": HOST, "method": "sum", "params": [1, 2]});
    let call = Call::new("$call", Payload::from(params)).with_timeout(Duration::from_secs(60));
    pair.command(caller, |s, now| s.request(now, call)).unwrap()
}

fn answer(pair: &mut Pair, host: ClientId, id: u64) {
    let params = json!({"call": id, "result": 3});
    pair.command(host, |s, now| {
        s.request(now, Call::new("$answer", Payload::from(params)))
    })
    .unwrap();
}

fn result(pair: &Pair, caller: ClientId, id: RequestId) -> Option<String> {
    match outcome(pair, caller, id)? {
        RequestOutcome::Ok { result } => Some(result.get().to_owned()),
        other => Some(format!("{other:?}")),
    }
}

#[test]
fn a_call_to_an_attached_host_is_delivered_and_settles_with_its_answer() {
    let (mut pair, caller, host) = pair();
    start(&mut pair, host, &[CALLS]);
    let id = call(&mut pair, caller);
    pair.run_for(Duration::from_millis(200));
    let delivered = deliveries(&pair, host);
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0].1, "sum");
    answer(&mut pair, host, delivered[0].0);
    pair.run_for(Duration::from_millis(200));
    assert_eq!(result(&pair, caller, id).as_deref(), Some("3"));
}

#[test]
fn a_call_wakes_an_asleep_host_and_is_delivered_when_it_attaches() {
    let (mut pair, caller, host) = pair();
    assert!(!pair.host_beat(HOST).unwrap().needed);
    let id = call(&mut pair, caller);
    pair.run_for(Duration::from_millis(200));
    assert!(
        pair.host_beat(HOST).unwrap().needed,
        "the call makes it needed"
    );
    start(&mut pair, host, &[CALLS]);
    let delivered = deliveries(&pair, host);
    assert_eq!(delivered.len(), 1, "delivered once attached");
    answer(&mut pair, host, delivered[0].0);
    pair.run_for(Duration::from_millis(200));
    assert_eq!(result(&pair, caller, id).as_deref(), Some("3"));
}

#[test]
fn past_the_wake_bound_a_call_settles_host_asleep() {
    let (mut pair, caller, _host) = pair();
    let id = call(&mut pair, caller);
    pair.run_for(Duration::from_secs(120));
    match outcome(&pair, caller, id) {
        Some(RequestOutcome::ServerError { error }) => assert_eq!(error.code, "host_asleep"),
        other => panic!("settled {other:?}"),
    }
}
