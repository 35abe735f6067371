//! An idempotency key is bound to its request: scoped to (user, method) and
//! checked against the params; a true retry, on any connection, gets the
//! stored outcome.

use belay_proto::message::Reply;
use serde_json::json;

use crate::common::{self, Raw};
use crate::{error_code, reply_to, request, server};
use belay_server::ServerConfig;

fn order_number(reply: &Reply) -> u64 {
    match reply {
        Reply::Result(v) => v.to_value().unwrap()["order"]
            .as_u64()
            .expect("an order number"),
        Reply::Error(e) => panic!("{e:?}"),
    }
}

#[tokio::test]
async fn the_same_key_with_other_params_is_a_bad_request_not_the_first_result() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&request(1, "order.create", json!("tea"), Some("k1")))
        .await;
    let first = reply_to(&mut raw, 1).await;
    raw.send(&request(2, "order.create", json!("coffee"), Some("k1")))
        .await;
    let other = reply_to(&mut raw, 2).await;
    assert_eq!(error_code(&other), "bad_request");
    // A true retry still gets the stored outcome.
    raw.send(&request(3, "order.create", json!("tea"), Some("k1")))
        .await;
    assert_eq!(reply_to(&mut raw, 3).await, first);
}

#[tokio::test]
async fn the_same_key_for_another_method_is_another_request() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&request(1, "echo", json!("tea"), Some("k"))).await;
    assert_eq!(
        reply_to(&mut raw, 1).await,
        Reply::Result(json!("tea").into())
    );
    raw.send(&request(2, "order.create", json!("tea"), Some("k")))
        .await;
    let order = reply_to(&mut raw, 2).await;
    assert_eq!(order_number(&order), 1, "order.create ran: {order:?}");
}

#[tokio::test]
async fn of_two_pipelined_requests_with_one_key_the_first_runs_and_both_get_its_result() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&request(1, "order.create", json!("tea"), Some("p")))
        .await;
    raw.send(&request(2, "order.create", json!("tea"), Some("p")))
        .await;
    let (a, b) = (reply_to(&mut raw, 1).await, reply_to(&mut raw, 2).await);
    assert_eq!(order_number(&a), 1);
    assert_eq!(a, b);
    // Pipelined with other params: the first runs, the second is refused.
    raw.send(&request(3, "order.create", json!("tea"), Some("q")))
        .await;
    raw.send(&request(4, "order.create", json!("cake"), Some("q")))
        .await;
    let mut replies = [
        reply_to(&mut raw, 3).await,
        Reply::Result(json!(null).into()),
    ];
    replies[1] = reply_to(&mut raw, 4).await;
    assert_eq!(order_number(&replies[0]), 2);
    assert_eq!(error_code(&replies[1]), "bad_request");
}

#[tokio::test]
async fn a_retry_on_a_new_connection_gets_the_stored_outcome() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut first, _) = Raw::connected(addr, None).await;
    first
        .send(&request(1, "order.create", json!("tea"), Some("r")))
        .await;
    let outcome = reply_to(&mut first, 1).await;
    drop(first);
    let (mut second, _) = Raw::connected(addr, None).await;
    second
        .send(&request(1, "order.create", json!("tea"), Some("r")))
        .await;
    assert_eq!(reply_to(&mut second, 1).await, outcome);
}
