//! An idempotency key is bound to its request: scoped to (user, method) and
//! checked against the params; a true retry, on any connection, gets the
//! stored outcome. A key in flight is waited for, not run again, and keyed
//! executions running at once are bounded server-wide.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use belay_proto::message::{Reply, ServerMessage};
use belay_server::rpc::{Methods, RpcError};
use belay_server::{Server, ServerConfig};
use serde_json::json;
use tokio::sync::watch;

use crate::common::{self, Raw};
use crate::{error_code, reply_to, request, server};

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

/// A `charge` method that waits at a gate until the test opens it, counting
/// the executions that started and those that finished.
struct Gated {
    server: Server,
    open: watch::Sender<bool>,
    started: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

/// A reply, and how many executions had finished when it arrived.
type Replies = HashMap<u64, (Reply, usize)>;

impl Gated {
    fn new(config: ServerConfig) -> Gated {
        let (open, gate) = watch::channel(false);
        let started = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let mut methods = Methods::new();
        methods.register("echo", |_ctx, value: serde_json::Value| async move {
            Ok::<_, RpcError>(value)
        });
        let (s, f) = (Arc::clone(&started), Arc::clone(&finished));
        methods.register("charge", move |_ctx, item: String| {
            let (started, finished, mut gate) = (Arc::clone(&s), Arc::clone(&f), gate.clone());
            async move {
                let run = started.fetch_add(1, Ordering::SeqCst) + 1;
                gate.wait_for(|open| *open).await.expect("the gate stays");
                finished.fetch_add(1, Ordering::SeqCst);
                Ok::<_, RpcError>(json!({ "run": run, "item": item }))
            }
        });
        let server = Server::builder().config(config).methods(methods).build();
        Gated {
            server,
            open,
            started,
            finished,
        }
    }

    /// Read responses into `got` until the one to `id` is there.
    async fn collect_until(&self, raw: &mut Raw, got: &mut Replies, id: u64) {
        while !got.contains_key(&id) {
            match raw.recv_skipping_pings().await {
                Some(ServerMessage::Response(r)) => {
                    let finished = self.finished.load(Ordering::SeqCst);
                    let earlier = got.insert(r.id, (r.reply, finished));
                    assert!(earlier.is_none(), "one reply to {}", r.id);
                }
                Some(_) => continue,
                None => panic!("closed before the reply to {id}"),
            }
        }
    }
}

#[tokio::test]
async fn a_pipelined_request_whose_key_is_running_waits_for_that_run_and_gets_its_result() {
    let gated = Gated::new(ServerConfig::default());
    let addr = common::start(&gated.server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&request(1, "charge", json!("tea"), Some("w")))
        .await;
    raw.send(&request(2, "charge", json!("tea"), Some("w")))
        .await;
    // Requests are admitted in arrival order: once the echo behind them is
    // answered, the second was admitted while the first is still running.
    raw.send(&request(3, "echo", json!(3), None)).await;
    let mut got = Replies::new();
    gated.collect_until(&mut raw, &mut got, 3).await;
    gated.open.send(true).expect("the method holds the gate");
    gated.collect_until(&mut raw, &mut got, 1).await;
    gated.collect_until(&mut raw, &mut got, 2).await;
    assert_eq!(
        gated.started.load(Ordering::SeqCst),
        1,
        "the method ran once"
    );
    let (first, second) = (&got[&1], &got[&2]);
    assert_eq!(
        first.0,
        Reply::Result(json!({ "run": 1, "item": "tea" }).into())
    );
    assert_eq!(second.0, first.0, "the second got the first run's result");
    assert_eq!(
        second.1, 1,
        "the second was answered after the run finished"
    );
}

#[tokio::test]
async fn keyed_executions_running_are_bounded_server_wide_and_unkeyed_requests_still_run() {
    let gated = Gated::new(ServerConfig::default().with_max_keyed_running(2));
    let addr = common::start(&gated.server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&request(1, "charge", json!("a"), Some("k1")))
        .await;
    raw.send(&request(2, "charge", json!("b"), Some("k2")))
        .await;
    raw.send(&request(3, "charge", json!("c"), Some("k3")))
        .await;
    raw.send(&request(4, "charge", json!("d"), None)).await;
    // Admitted in arrival order: once the echo is answered, 1 and 2 hold
    // the bound and 3 and 4 were decided while they run.
    raw.send(&request(5, "echo", json!(5), None)).await;
    let mut got = Replies::new();
    gated.collect_until(&mut raw, &mut got, 5).await;
    gated.open.send(true).expect("the method holds the gate");
    for id in [1, 2, 3, 4] {
        gated.collect_until(&mut raw, &mut got, id).await;
    }
    match &got[&3].0 {
        Reply::Error(e) => {
            assert_eq!(e.code, "rate_limited");
            assert_eq!(e.message, "too many idempotent requests running");
        }
        Reply::Result(r) => panic!("the third keyed request ran: {r}"),
    }
    for id in [1, 2, 4] {
        assert!(
            matches!(got[&id].0, Reply::Result(_)),
            "{id}: {:?}",
            got[&id]
        );
    }
    assert_eq!(
        gated.started.load(Ordering::SeqCst),
        3,
        "1, 2 and the unkeyed 4 ran"
    );
    // The bound is on executions running: with 1 and 2 done, a fresh key runs.
    raw.send(&request(6, "charge", json!("e"), Some("k6")))
        .await;
    let fresh = reply_to(&mut raw, 6).await;
    assert!(
        matches!(fresh, Reply::Result(_)),
        "a fresh key after: {fresh:?}"
    );
}
