//! The admin console's lookup and disconnect reach every node: two
//! `belay serve --demo` nodes on one Redis; a user connected to node B is
//! found from node A's `/admin/cluster/sessions` (with B's id, transport
//! and codec) and closed 4003 by A's `/admin/cluster/disconnect`; bad
//! input to those routes is refused 400.

use std::time::Duration;

use belay_test_support::services::RedisServer;
use belay_test_support::sockets::{http_call, Closed, Raw};
use serde_json::{json, Value};

use crate::harness::Node;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_on_another_node_is_found_and_disconnected_from_this_nodes_console() {
    let redis = RedisServer::start().await;
    let a = Node::start_direct(&redis).await;
    let b = Node::start_direct(&redis).await;
    let (mut raw, _welcome) = Raw::connected(b.addr(), None).await;
    // An answered request: B's connection task is past its welcome.
    raw.answered(1, "echo", json!({})).await;

    let found = http_call(
        a.addr(),
        "GET",
        "/admin/cluster/sessions?user=anonymous",
        None,
    )
    .await;
    assert_eq!(found.status, 200, "{found:?}");
    let found: Value = serde_json::from_str(&found.body).unwrap();
    let nodes = found["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 2, "{found}");
    let sessions: Vec<&Value> = nodes
        .iter()
        .flat_map(|n| n["answer"].as_array().unwrap())
        .collect();
    assert_eq!(sessions.len(), 1, "{found}");
    assert_eq!(sessions[0]["transport"], "websocket");
    assert_eq!(sessions[0]["codec"], "json");

    let body = r#"{"user":"anonymous","reason":"test"}"#;
    let closed = http_call(a.addr(), "POST", "/admin/cluster/disconnect", Some(body)).await;
    assert_eq!(closed.status, 200, "{closed:?}");
    let closed: Value = serde_json::from_str(&closed.body).unwrap();
    let total: u64 = closed["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["answer"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 1, "{closed}");
    match raw.closed_within(Duration::from_secs(10)).await {
        Closed::Frame(code, reason) => {
            assert_eq!(code, 4003);
            assert_eq!(reason, "disconnected: test");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_routes_refuse_a_missing_or_long_user_and_a_body_that_is_not_json() {
    let redis = RedisServer::start().await;
    let a = Node::start_direct(&redis).await;
    let long = format!("/admin/cluster/sessions?user={}", "u".repeat(2_000));
    for path in ["/admin/cluster/sessions", long.as_str()] {
        let answer = http_call(a.addr(), "GET", path, None).await;
        assert_eq!(answer.status, 400, "{path}: {answer:?}");
    }
    let huge = format!(r#"{{"user":"{}"}}"#, "u".repeat(8 << 10));
    for body in ["{nope", r#"{"reason":"no user"}"#, huge.as_str()] {
        let answer = http_call(a.addr(), "POST", "/admin/cluster/disconnect", Some(body)).await;
        assert_eq!(answer.status, 400, "{body}: {answer:?}");
    }
}
