//! Idempotency across nodes: a keyed request runs once in the cluster. A
//! retry that lands on another node, after the node that ran it was killed,
//! gets the stored outcome; a retry while it still runs elsewhere waits for
//! it; a retry after the running node died is told the attempt was lost.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::common::{config, next, Node, Raw, RedisServer};
use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage};
use belay_server::rpc::{Methods, RpcError};
use serde_json::{json, Value};
use tokio::sync::Notify;

/// What every node's methods share: how many times any node ran one, and
/// the gate `hold` waits on.
#[derive(Clone, Default)]
struct Effects {
    runs: Arc<AtomicUsize>,
    /// `hold` signals here when it starts.
    started: Arc<Notify>,
    gate: Arc<Notify>,
}

impl Effects {
    fn methods(&self) -> Methods {
        let mut methods = Methods::new();
        let runs = Arc::clone(&self.runs);
        methods.register("charge", move |_ctx, amount: u64| {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            async move { Ok::<_, RpcError>(json!({ "charged": amount, "run": run })) }
        });
        let (runs, gate) = (Arc::clone(&self.runs), Arc::clone(&self.gate));
        let started = Arc::clone(&self.started);
        methods.register("hold", move |_ctx, amount: u64| {
            let run = runs.fetch_add(1, Ordering::SeqCst) + 1;
            started.notify_one();
            let gate = Arc::clone(&gate);
            async move {
                gate.notified().await;
                Ok::<_, RpcError>(json!({ "charged": amount, "run": run }))
            }
        });
        methods
    }

    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    /// Wait until a `hold` has started.
    async fn held(&self) {
        tokio::time::timeout(crate::common::SOON, self.started.notified())
            .await
            .expect("the method started in time");
    }
}

fn keyed(id: u64, method: &str, amount: u64, key: &str) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: method.into(),
        params: json!(amount),
        idem: Some(key.into()),
        timeout_ms: None,
    })
}

/// Send a keyed request on a fresh connection to `addr` and return its reply.
async fn ask(addr: SocketAddr, request: &ClientMessage) -> Reply {
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(request).await;
    answer(&mut raw).await
}

async fn answer(raw: &mut Raw) -> Reply {
    match next(raw).await {
        ServerMessage::Response(response) => response.reply,
        other => panic!("a response expected, got {other:?}"),
    }
}

fn result(reply: &Reply) -> Value {
    match reply {
        Reply::Result(value) => serde_json::to_value(value).expect("JSON"),
        Reply::Error(error) => panic!("a result expected, got {error:?}"),
    }
}

fn error_code(reply: &Reply) -> &str {
    match reply {
        Reply::Error(error) => &error.code,
        Reply::Result(value) => panic!("an error expected, got {value:?}"),
    }
}

#[tokio::test]
async fn a_retry_on_another_node_after_the_first_was_killed_gets_the_stored_outcome() {
    let redis = RedisServer::start().await;
    let effects = Effects::default();
    let a = Node::start(config(&redis), effects.methods()).await;
    let b = Node::start(config(&redis), effects.methods()).await;
    let first = ask(a.addr, &keyed(1, "charge", 30, "order-7")).await;
    a.kill();
    let retry = ask(b.addr, &keyed(1, "charge", 30, "order-7")).await;
    assert_eq!(result(&retry), result(&first), "the stored outcome");
    assert_eq!(effects.runs(), 1, "executed once in the cluster");
    b.kill();
}

#[tokio::test]
async fn a_retry_while_another_node_still_runs_it_waits_for_that_outcome() {
    let redis = RedisServer::start().await;
    let effects = Effects::default();
    let a = Node::start(config(&redis), effects.methods()).await;
    let b = Node::start(config(&redis), effects.methods()).await;
    let (mut on_a, _) = Raw::connected(a.addr, None).await;
    on_a.send(&keyed(1, "hold", 5, "order-8")).await;
    effects.held().await;
    let (mut on_b, _) = Raw::connected(b.addr, None).await;
    on_b.send(&keyed(1, "hold", 5, "order-8")).await;
    // B's retry is waiting on A's claim; A finishes now.
    effects.gate.notify_one();
    let first = answer(&mut on_a).await;
    let retry = answer(&mut on_b).await;
    assert_eq!(result(&retry), result(&first));
    assert_eq!(effects.runs(), 1, "B never ran it");
    a.kill();
    b.kill();
}

#[tokio::test]
async fn a_retry_after_the_running_node_died_is_told_the_attempt_was_lost_then_runs() {
    let redis = RedisServer::start().await;
    let effects = Effects::default();
    let a = Node::start(config(&redis), effects.methods()).await;
    let b = Node::start(config(&redis), effects.methods()).await;
    let (mut on_a, _) = Raw::connected(a.addr, None).await;
    on_a.send(&keyed(1, "hold", 5, "order-9")).await;
    effects.held().await;
    a.kill();
    // A's claim lapses with its lease (600 ms): the retry is not left waiting.
    let retry = ask(b.addr, &keyed(1, "hold", 5, "order-9")).await;
    assert_eq!(error_code(&retry), "unavailable");
    assert_eq!(
        effects.runs(),
        1,
        "the lost attempt is not run again by the waiter"
    );
    // The key is free: the client's next retry runs it.
    let (mut again, _) = Raw::connected(b.addr, None).await;
    again.send(&keyed(2, "hold", 5, "order-9")).await;
    effects.held().await;
    effects.gate.notify_one();
    assert_eq!(result(&answer(&mut again).await)["run"], 2);
    b.kill();
}

#[tokio::test]
async fn a_key_reused_with_other_params_on_another_node_is_refused() {
    let redis = RedisServer::start().await;
    let effects = Effects::default();
    let a = Node::start(config(&redis), effects.methods()).await;
    let b = Node::start(config(&redis), effects.methods()).await;
    result(&ask(a.addr, &keyed(1, "charge", 30, "order-10")).await);
    let other = ask(b.addr, &keyed(1, "charge", 31, "order-10")).await;
    assert_eq!(error_code(&other), "bad_request");
    assert_eq!(effects.runs(), 1);
    a.kill();
    b.kill();
}

#[tokio::test]
async fn the_outcomes_a_node_keeps_in_redis_stay_within_their_byte_budget() {
    let redis = RedisServer::start().await;
    let effects = Effects::default();
    let budget = 4_096;
    let a = Node::start(config(&redis).outcome_max_bytes(budget), effects.methods()).await;
    let (mut raw, _) = Raw::connected(a.addr, None).await;
    for n in 0..100u64 {
        raw.send(&keyed(n, "charge", n, &format!("key-{n:04}")))
            .await;
        result(&answer(&mut raw).await);
    }
    assert!(
        a.broker.outcome_bytes() <= budget,
        "{}",
        a.broker.outcome_bytes()
    );
    let mut redis_conn = redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("belay.idem.*")
        .query_async(&mut redis_conn)
        .await
        .expect("KEYS");
    assert!(!keys.is_empty(), "the newest outcomes are kept");
    assert!(
        keys.len() < 100,
        "the oldest were deleted: {} kept",
        keys.len()
    );
    let mut held = 0;
    for key in &keys {
        let len: usize = redis::cmd("STRLEN")
            .arg(key)
            .query_async(&mut redis_conn)
            .await
            .expect("STRLEN");
        held += key.len() + len;
    }
    assert!(held <= budget, "{held} bytes of keys and records in Redis");
    a.kill();
}
