//! An idempotency key is scoped to the user and the method, bound to its
//! params, and keyed executions running at once are bounded.

use serde_json::json;

use super::{at, node_with};
use crate::message::{RawJson, Reply};
use crate::server::node::{KeyedAdmit, NodeConfig};

fn ok(n: u64) -> Reply {
    Reply::Result(RawJson::from_value(&json!(n)))
}

#[test]
fn a_retry_gets_the_stored_outcome_and_a_retry_while_running_waits() {
    let (mut node, _) = node_with(NodeConfig::default(), &[]);
    let KeyedAdmit::Run(run) = node.begin_keyed(at(0), "alice", "order", "k1", &json!({"n": 1}))
    else {
        panic!("the first request runs");
    };
    assert_eq!(
        node.begin_keyed(at(1), "alice", "order", "k1", &json!({"n": 1})),
        KeyedAdmit::Wait(run.clone())
    );
    node.complete_keyed(at(2), &run, &ok(7));
    assert_eq!(
        node.begin_keyed(at(3), "alice", "order", "k1", &json!({"n": 1})),
        KeyedAdmit::Answer(ok(7))
    );
    assert_eq!(node.keyed_running(), 0);
}

#[test]
fn the_key_is_the_users_and_the_methods() {
    let (mut node, _) = node_with(NodeConfig::default(), &[]);
    let params = json!({});
    assert!(matches!(
        node.begin_keyed(at(0), "alice", "order", "k", &params),
        KeyedAdmit::Run(_)
    ));
    assert!(matches!(
        node.begin_keyed(at(0), "bob", "order", "k", &params),
        KeyedAdmit::Run(_)
    ));
    assert!(matches!(
        node.begin_keyed(at(0), "alice", "refund", "k", &params),
        KeyedAdmit::Run(_)
    ));
}

#[test]
fn the_same_key_with_other_params_is_a_conflict() {
    let (mut node, _) = node_with(NodeConfig::default(), &[]);
    let KeyedAdmit::Run(run) = node.begin_keyed(at(0), "a", "m", "k", &json!(1)) else {
        panic!("runs");
    };
    node.complete_keyed(at(1), &run, &ok(1));
    let KeyedAdmit::Answer(Reply::Error(error)) = node.begin_keyed(at(2), "a", "m", "k", &json!(2))
    else {
        panic!("refused");
    };
    assert_eq!(error.code, "bad_request");
}

#[test]
fn past_the_running_bound_a_key_is_refused_and_left_free() {
    let mut config = NodeConfig::default();
    config.set_max_keyed_running(1);
    let (mut node, _) = node_with(config, &[]);
    let KeyedAdmit::Run(first) = node.begin_keyed(at(0), "a", "m", "k1", &json!(0)) else {
        panic!("runs");
    };
    let KeyedAdmit::Answer(Reply::Error(error)) =
        node.begin_keyed(at(0), "a", "m", "k2", &json!(0))
    else {
        panic!("refused");
    };
    assert_eq!(error.code, "rate_limited");
    node.abandon_keyed(&first);
    assert!(
        matches!(
            node.begin_keyed(at(1), "a", "m", "k2", &json!(0)),
            KeyedAdmit::Run(_)
        ),
        "the refused key was not taken"
    );
}
