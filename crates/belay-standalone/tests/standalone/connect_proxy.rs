//! The connect proxy: the backend says who a connection is. Its refusal
//! closes 4001 with its message; a backend that is down or too slow
//! closes 1013 `unavailable` (the client retries: not an auth failure),
//! and a connection waiting for the backend holds up no other.

use std::time::{Duration, Instant};

use crate::common::{backend, next, nobody, node, subscribe, BACKEND_TIMEOUT, SOON};
use axum::routing::post;
use axum::{Json, Router};
use belay_proto::message::ServerMessage;
use belay_server::Namespaces;
use belay_standalone::{Backend, BackendAuth};
use belay_test_support::sockets::{http_call, Closed, Raw};
use serde_json::{json, Value};

/// `alice` is Alice; `expired` is refused; `hang` is never answered.
fn app() -> Router {
    Router::new().route(
        "/connect",
        post(|Json(body): Json<Value>| async move {
            match body["token"].as_str() {
                Some("alice") => Json(json!({"result": {"user": "alice"}})),
                Some("hang") => std::future::pending().await,
                _ => Json(json!({"error": {"code": "unauthorized", "message": "session expired"}})),
            }
        }),
    )
}

fn auth(url: &str) -> BackendAuth {
    BackendAuth::default().connect_through(Backend::new(url, BACKEND_TIMEOUT, 64).expect("url"))
}

#[tokio::test]
async fn the_backend_names_the_user_of_a_connection() {
    let (url, _backend) = backend(app()).await;
    let addr = node(auth(&format!("{url}/connect")), Namespaces::new()).await;
    let (mut alice, _) = Raw::connected(addr, Some("alice")).await;
    // Her user channel is hers: the principal is the backend's `alice`.
    alice.send(&subscribe("#alice")).await;
    assert!(matches!(
        next(&mut alice).await,
        ServerMessage::Subscribed(_)
    ));
    alice.send(&subscribe("#bob")).await;
    let ServerMessage::Unsubscribed(refused) = next(&mut alice).await else {
        panic!("a refusal expected")
    };
    assert_eq!(refused.code, "forbidden");
}

#[tokio::test]
async fn a_backend_refusal_closes_4001_with_its_message() {
    let (url, _backend) = backend(app()).await;
    let addr = node(auth(&format!("{url}/connect")), Namespaces::new()).await;
    let mut raw = Raw::open(addr).await;
    raw.send_text(r#"{"type":"connect","protocol":1,"token":"stolen"}"#)
        .await;
    assert_eq!(
        raw.closed_within(SOON).await,
        Closed::Frame(4001, "unauthorized: session expired".into())
    );
}

#[tokio::test]
async fn a_dead_backend_closes_1013_so_the_client_retries() {
    let addr = node(auth(&nobody().await), Namespaces::new()).await;
    let mut raw = Raw::open(addr).await;
    raw.send_text(r#"{"type":"connect","protocol":1,"token":"alice"}"#)
        .await;
    let Closed::Frame(code, reason) = raw.closed_within(SOON).await else {
        panic!("a close frame expected")
    };
    assert_eq!(code, 1013, "{reason}");
    assert!(reason.starts_with("unavailable: "), "{reason}");
}

#[tokio::test]
async fn a_slow_backend_closes_1013_in_its_timeout_and_holds_up_nobody_else() {
    let (url, _backend) = backend(app()).await;
    let addr = node(auth(&format!("{url}/connect")), Namespaces::new()).await;
    let started = Instant::now();
    let mut waiting = Raw::open(addr).await;
    waiting
        .send_text(r#"{"type":"connect","protocol":1,"token":"hang"}"#)
        .await;
    // Meanwhile another client connects, and the node stays ready.
    let (_alice, welcome) = Raw::connected(addr, Some("alice")).await;
    assert!(matches!(welcome, ServerMessage::Welcome(_)));
    assert_eq!(http_call(addr, "GET", "/readyz", None).await.status, 200);
    let Closed::Frame(code, reason) = waiting.closed_within(SOON).await else {
        panic!("a close frame expected")
    };
    assert_eq!(
        (code, reason.as_str()),
        (1013, "unavailable: the backend did not answer in time")
    );
    // Generous bound: the backend's timeout, not the handshake's.
    assert!(started.elapsed() < BACKEND_TIMEOUT + Duration::from_secs(3));
}
