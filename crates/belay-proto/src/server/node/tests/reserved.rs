//! The reserved methods' params are typed: unknown fields and wrong types
//! are `bad_request`, the rules' refusals come before anyone is asked.

use serde_json::json;

use super::node_with;
use crate::message::{
    AnswerOutcome, AnswerParams, CallParams, ErrorBody, PresenceParams, PublishParams,
};
use crate::server::node::{AccessRoute, Caller, NodeConfig, ReservedCall};
use crate::server::{Access, ChannelOptions, Namespaces};

fn node() -> crate::server::node::Node {
    let mut config = NodeConfig::default();
    config.set_namespaces(
        Namespaces::new()
            .with_defaults(ChannelOptions::default().with_publish(Access::Anyone))
            .with("room:*", ChannelOptions::default().with_presence(true))
            .with(
                "$host:billing",
                ChannelOptions::default().with_subscribe(Access::Backend),
            ),
    );
    node_with(config, &[]).0
}

fn code(result: Option<Result<ReservedCall, crate::message::ErrorBody>>) -> String {
    result.unwrap().unwrap_err().code
}

#[test]
fn publish_params_are_typed_and_routed() {
    let call = node()
        .reserved_call(
            Caller::client(),
            "$publish",
            &json!({"channel": "news", "data": {"a": 1}}),
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        call,
        ReservedCall::Publish {
            params: PublishParams::new("news", json!({"a": 1})),
            access: AccessRoute::Allowed,
        }
    );
}

#[test]
fn malformed_params_are_a_bad_request() {
    let node = node();
    let me = Caller::client();
    assert_eq!(
        code(node.reserved_call(me, "$publish", &json!({"channel": "n"}))),
        "bad_request"
    );
    assert_eq!(
        code(node.reserved_call(
            me,
            "$publish",
            &json!({"channel": "n", "data": 1, "extra": 2})
        )),
        "bad_request"
    );
    assert_eq!(
        code(node.reserved_call(me, "$presence", &json!({"channel": 5}))),
        "bad_request"
    );
}

#[test]
fn joins_and_leaves_are_the_servers_to_publish() {
    let result = node().reserved_call(
        Caller::client(),
        "$publish",
        &json!({"channel": "$presence:room:1", "data": {"join": {}}}),
    );
    assert_eq!(code(result), "forbidden");
}

#[test]
fn presence_is_asked_as_a_subscribe_and_refused_where_it_is_not_kept() {
    let node = node();
    let call = node
        .reserved_call(
            Caller::client(),
            "$presence_stats",
            &json!({"channel": "room:1", "token": "t"}),
        )
        .unwrap()
        .unwrap();
    let mut params = PresenceParams::new("room:1");
    params.token = Some("t".into());
    assert_eq!(
        call,
        ReservedCall::Presence {
            params,
            stats: true,
            access: AccessRoute::Grant {
                channel: "room:1".into()
            },
        }
    );
    assert_eq!(
        code(node.reserved_call(Caller::client(), "$presence", &json!({"channel": "news"}))),
        "bad_request"
    );
}

#[test]
fn a_call_is_typed_and_asked_as_a_subscribe_to_the_host() {
    let node = node();
    let call = node
        .reserved_call(
            Caller::client(),
            "$call",
            &json!({"host": "billing", "method": "charge", "params": [1]}),
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        call,
        ReservedCall::Call {
            params: CallParams::new("billing", "charge", json!([1])),
            access: AccessRoute::Backend {
                channel: "$host:billing".into()
            },
        }
    );
}

#[test]
fn a_call_without_params_calls_with_null() {
    let call = node()
        .reserved_call(
            Caller::client(),
            "$call",
            &json!({"host": "h1", "method": "ping"}),
        )
        .unwrap()
        .unwrap();
    let ReservedCall::Call { params, .. } = call else {
        panic!("{call:?}");
    };
    assert_eq!(params, CallParams::new("h1", "ping", json!(null)));
}

#[test]
fn a_call_to_no_host_id_or_a_bad_method_is_a_bad_request() {
    let node = node();
    let me = Caller::client();
    for params in [
        json!({"host": "", "method": "m"}),
        json!({"host": "a:b", "method": "m"}),
        json!({"host": "h", "method": ""}),
        json!({"host": "h", "method": "m".repeat(129)}),
        json!({"host": "h", "method": "m", "extra": 1}),
        json!({"method": "m"}),
    ] {
        assert_eq!(
            code(node.reserved_call(me, "$call", &params)),
            "bad_request",
            "{params}"
        );
    }
    let longest = json!({"host": "h", "method": "m".repeat(128)});
    assert!(node.reserved_call(me, "$call", &longest).unwrap().is_ok());
}

#[test]
fn only_a_host_answers() {
    let result = node().reserved_call(
        Caller::client(),
        "$answer",
        &json!({"call": 1, "result": 2}),
    );
    assert_eq!(code(result), "forbidden");
}

#[test]
fn an_answer_is_a_result_even_null_or_the_hosts_error() {
    let node = node();
    let host = Caller::host("h1");
    let call = node
        .reserved_call(host, "$answer", &json!({"call": 3, "result": null}))
        .unwrap()
        .unwrap();
    assert_eq!(
        call,
        ReservedCall::Answer {
            params: AnswerParams::new(3, AnswerOutcome::Result(json!(null)))
        }
    );
    let call = node
        .reserved_call(
            host,
            "$answer",
            &json!({"call": 4, "error": {"code": "not_found", "message": "no"}}),
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        call,
        ReservedCall::Answer {
            params: AnswerParams::new(4, AnswerOutcome::Error(ErrorBody::new("not_found", "no")))
        }
    );
}

#[test]
fn malformed_answers_are_a_bad_request() {
    let node = node();
    let host = Caller::host("h1");
    for bad in [
        json!(null),
        json!({"result": 1}),
        json!({"call": -1, "result": 1}),
        json!({"call": 1}),
        json!({"call": 1, "result": 1, "error": {"code": "x"}}),
        json!({"call": 1, "error": {"message": "no code"}}),
        json!({"call": 1, "result": 1, "extra": true}),
    ] {
        assert_eq!(
            code(node.reserved_call(host, "$answer", &bad)),
            "bad_request",
            "{bad}"
        );
    }
}

#[test]
fn other_methods_are_not_the_nodes() {
    assert!(node()
        .reserved_call(Caller::client(), "sum", &json!({}))
        .is_none());
}
