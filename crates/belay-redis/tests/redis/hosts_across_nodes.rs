//! Resident hosts across nodes on one Redis (docs/HOSTS.md, "Across
//! nodes"): a call on one node reaches a host connected to another; a
//! sleeping host that beats on one node is woken for a call made on
//! another, and answers it; a subscriber of the host on one node keeps its
//! heartbeats on another answering `needed`, until it leaves; and a node killed while a call waits for its
//! host's answer settles that call `host_lost` on the caller's node within
//! the stated bound (`node_ttl` for the dead node's lease to lapse, a
//! period for the caller's node to read it, a command timeout).
//!
//! The host is a raw protocol client with token `host:ID`: it beats on
//! `POST /hosts/heartbeat`, subscribes to `$host-calls:ID` and answers with
//! `$answer`, as belay-client's host does. A forwarded answer that is
//! malformed, or for no call of the node, is taken by nobody.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{config, next, subscribe, Node, Raw, RedisServer};
use belay_proto::host::HostTiming;
use belay_proto::message::{ClientMessage, Reply, ServerMessage};
use belay_redis::RedisBroker;
use belay_server::auth::{AuthError, Authenticator, Principal};
use belay_server::{Server, ServerConfig};
use belay_test_support::sockets::http_call_with;
use serde_json::{json, Value};

const HOST: &str = "pc-1";
/// Leases last this long; each node renews every third of it.
const NODE_TTL: Duration = Duration::from_millis(600);
const COMMAND_TIMEOUT: Duration = Duration::from_millis(500);

/// `host:ID` is host `ID`; anything else is the user `alice`.
struct Tokens;

impl Authenticator for Tokens {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        match token.and_then(|t| t.strip_prefix("host:")) {
            Some(id) => Ok(Principal::user(id).hosting(id)),
            None => Ok(Principal::user("alice")),
        }
    }
}

/// A node whose hosts beat every 200 ms and get 2 s to connect once woken.
async fn node(redis: &RedisServer) -> Node {
    let redis = config(redis)
        .node_ttl(NODE_TTL)
        .command_timeout(COMMAND_TIMEOUT);
    Node::start_built(redis, |broker: RedisBroker| {
        let timing = HostTiming::default()
            .with_heartbeat_interval(Duration::from_millis(200))
            .with_connect_allowance(Duration::from_secs(2));
        Server::builder()
            .config(ServerConfig::default().with_host_timing(timing))
            .authenticator(Tokens)
            .broker(Arc::new(broker))
            .build()
    })
    .await
}

/// The host's heartbeat on `node`: its JSON answer.
async fn beat(node: &Node) -> Value {
    let auth = format!("Authorization: Bearer host:{HOST}");
    let answer = http_call_with(node.addr, "POST", "/hosts/heartbeat", &[&auth], None).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    serde_json::from_str(&answer.body).expect("JSON")
}

/// The host's session on `node`, holding its calls channel.
async fn connect_host(node: &Node) -> Raw {
    let (mut raw, _) = Raw::connected(node.addr, Some(&format!("host:{HOST}"))).await;
    let ServerMessage::Subscribed(_) =
        subscribe(&mut raw, &format!("$host-calls:{HOST}"), None).await
    else {
        panic!("the host holds its calls channel")
    };
    raw
}

/// Send `$call` from `caller` (request `id`).
async fn call(caller: &mut Raw, id: u64) {
    let params = json!({ "host": HOST, "method": "echo", "params": { "n": id } });
    caller.request(id, "$call", params).await;
}

/// The next call delivered to the host: its id and params.
async fn delivered(host: &mut Raw) -> (u64, Value) {
    loop {
        if let ServerMessage::Publication(p) = next(host).await {
            let data: Value = p.data.parse().expect("JSON");
            return (
                data["call"].as_u64().expect("a call id"),
                data["params"].clone(),
            );
        }
    }
}

/// The host answers `call` with `result`; the relay's verdict.
async fn answer(host: &mut Raw, call: u64, result: Value) -> Reply {
    host.request(900, "$answer", json!({ "call": call, "result": result }))
        .await;
    response(host, 900).await
}

/// The reply to request `id`, waiting up to `within`.
async fn response_within(raw: &mut Raw, id: u64, within: Duration) -> Reply {
    tokio::time::timeout(within, async {
        loop {
            if let Some(ServerMessage::Response(r)) = raw.recv_skipping_pings().await {
                if r.id == id {
                    return r.reply;
                }
            }
        }
    })
    .await
    .expect("an answer in time")
}

async fn response(raw: &mut Raw, id: u64) -> Reply {
    response_within(raw, id, Duration::from_secs(5)).await
}

/// Nodes A and S on `redis`, the host beating on and connected to S, and
/// a caller on A.
async fn host_on_s_caller_on_a(redis: &RedisServer) -> (Node, Node, Raw, Raw) {
    let a = node(redis).await;
    let s = node(redis).await;
    beat(&s).await;
    let host = connect_host(&s).await;
    let (caller, _) = Raw::connected(a.addr, Some("alice")).await;
    (a, s, host, caller)
}

fn result(reply: &Reply) -> Value {
    let Reply::Result(result) = reply else {
        panic!("a result expected, got {reply:?}")
    };
    serde_json::from_str(result.get()).expect("JSON")
}

#[tokio::test]
async fn a_call_on_one_node_reaches_a_host_connected_to_another() {
    let redis = RedisServer::start().await;
    let (a, s, mut host, mut caller) = host_on_s_caller_on_a(&redis).await;
    // Until S has told the others it holds the host (within a period),
    // the call waits on A as for a waking host; then A delivers it.
    call(&mut caller, 1).await;
    let (id, params) = delivered(&mut host).await;
    assert_eq!(params, json!({ "n": 1 }));
    let verdict = answer(&mut host, id, json!({ "echo": 1 })).await;
    assert!(
        matches!(verdict, Reply::Result(_)),
        "S hands the answer to A: {verdict:?}"
    );
    assert_eq!(
        result(&response(&mut caller, 1).await),
        json!({ "echo": 1 })
    );
    // An answer nobody's call waits for is still refused.
    let stray = answer(&mut host, id, json!("again")).await;
    assert!(
        matches!(&stray, Reply::Error(e) if e.code == "not_found"),
        "{stray:?}"
    );
    a.kill();
    s.kill();
}

#[tokio::test]
async fn a_sleeping_host_is_woken_for_a_call_on_another_node() {
    let redis = RedisServer::start().await;
    let a = node(&redis).await;
    let s = node(&redis).await;
    let first = beat(&s).await;
    assert_eq!(first["needed"], json!(false));
    let (mut caller, _) = Raw::connected(a.addr, Some("alice")).await;
    // A never saw the host beat: it learns of it from S's record.
    call(&mut caller, 7).await;
    let started = Instant::now();
    let mut needed = false;
    while !needed && started.elapsed() < Duration::from_secs(3) {
        tokio::time::sleep(Duration::from_millis(200)).await;
        needed = beat(&s).await["needed"] == json!(true);
    }
    assert!(needed, "a heartbeat on S learns that A needs the host");
    let mut host = connect_host(&s).await;
    let (id, params) = delivered(&mut host).await;
    assert_eq!(params, json!({ "n": 7 }));
    answer(&mut host, id, json!("awake")).await;
    assert_eq!(result(&response(&mut caller, 7).await), json!("awake"));
    a.kill();
    s.kill();
}

/// Beat on `node` (at the host's cadence) until the answer's `needed` is
/// `want`, within 5 s.
async fn beats_until_needed(node: &Node, want: bool) {
    let started = Instant::now();
    loop {
        if beat(node).await["needed"] == json!(want) {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "heartbeats never answered needed: {want}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_subscriber_on_one_node_keeps_the_host_needed_where_it_beats() {
    let redis = RedisServer::start().await;
    let a = node(&redis).await;
    let b = node(&redis).await;
    beats_until_needed(&b, false).await;
    let (mut watcher, _) = Raw::connected(a.addr, Some("alice")).await;
    let ServerMessage::Subscribed(_) =
        subscribe(&mut watcher, &format!("$host:{HOST}"), None).await
    else {
        panic!("subscribed to the host's channel")
    };
    beats_until_needed(&b, true).await;
    watcher
        .send(&ClientMessage::Unsubscribe(
            belay_proto::message::Unsubscribe {
                channel: format!("$host:{HOST}"),
            },
        ))
        .await;
    beats_until_needed(&b, false).await;
    a.kill();
    b.kill();
}

#[tokio::test]
async fn a_node_killed_during_a_call_settles_it_host_lost_within_the_bound() {
    let redis = RedisServer::start().await;
    let (a, s, mut host, mut caller) = host_on_s_caller_on_a(&redis).await;
    call(&mut caller, 3).await;
    delivered(&mut host).await;
    // The host runs the call and never answers: its node dies.
    let killed = Instant::now();
    s.kill();
    let bound = NODE_TTL + NODE_TTL / 3 + COMMAND_TIMEOUT;
    let verdict = response_within(&mut caller, 3, bound * 3).await;
    let took = killed.elapsed();
    let Reply::Error(error) = verdict else {
        panic!("host_lost expected, got {verdict:?}")
    };
    assert_eq!(error.code, "host_lost", "{error:?}");
    assert!(
        took < bound * 3,
        "settled {took:?} after the kill (bound {bound:?}, thrice on a loaded machine)"
    );
    eprintln!("host_lost {took:?} after the node was killed (bound {bound:?})");
    a.kill();
}

#[tokio::test]
async fn a_malformed_or_unknown_forwarded_answer_is_taken_by_no_node() {
    let redis = RedisServer::start().await;
    let a = node(&redis).await;
    let b = node(&redis).await;
    let to_a = |body: Value| {
        let control = b.broker.control().clone();
        let node = a.broker.control().node().to_owned();
        async move {
            control
                .request(
                    &node,
                    belay_redis::HOST_ANSWER,
                    body,
                    Duration::from_secs(2),
                )
                .await
        }
    };
    for hostile in [
        json!("not an object"),
        json!({ "host": HOST, "call": "seven", "reply": { "result": 1 } }),
        json!({ "host": HOST, "call": 7, "reply": { "neither": 1 } }),
        json!({ "host": 5, "call": 7, "reply": { "result": 1 } }),
    ] {
        assert_eq!(to_a(hostile.clone()).await, Ok(json!(false)), "{hostile}");
    }
    let unknown = json!({ "host": HOST, "call": 7, "reply": { "result": 1 } });
    assert_eq!(to_a(unknown).await, Ok(json!(false)), "no such call on A");
    a.kill();
    b.kill();
}
