//! The reserved methods' params are typed: unknown fields and wrong types
//! are `bad_request`, the rules' refusals come before anyone is asked.

use serde_json::json;

use super::node_with;
use crate::message::{PresenceParams, PublishParams};
use crate::server::node::{AccessRoute, Caller, NodeConfig, ReservedCall};
use crate::server::{Access, ChannelOptions, Namespaces};

fn node() -> crate::server::node::Node {
    let mut config = NodeConfig::default();
    config.set_namespaces(
        Namespaces::new()
            .with_defaults(ChannelOptions::default().with_publish(Access::Anyone))
            .with("room:*", ChannelOptions::default().with_presence(true)),
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
fn other_methods_are_not_the_nodes() {
    assert!(node()
        .reserved_call(Caller::client(), "sum", &json!({}))
        .is_none());
}
