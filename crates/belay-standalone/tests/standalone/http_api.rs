//! The HTTP server API against a running server: publish reaches a
//! subscriber with its offset, an idempotency key publishes once, a
//! broadcast reaches every channel, and every bad request gets its
//! documented JSON error (401, 400 naming the field, 409, 413).

use std::net::SocketAddr;

use belay_proto::message::{ClientMessage, ServerMessage, Subscribe};
use belay_server::Server;
use belay_test_support::sockets::{http_call_with, HttpResponse, Raw};
use serde_json::{json, Value};

const KEY: &str = "test-api-key";
const AUTH: &str = "Authorization: Bearer test-api-key";

async fn start() -> (Server, SocketAddr) {
    let server = Server::builder().build();
    let router = server
        .router()
        .merge(belay_standalone::api::router(&server, KEY, 4_096, None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let serving = server.clone();
    tokio::spawn(async move { serving.serve(listener, router).await });
    (server, addr)
}

async fn post(addr: SocketAddr, path: &str, headers: &[&str], body: &str) -> (u16, Value) {
    let response: HttpResponse = http_call_with(addr, "POST", path, headers, Some(body)).await;
    let value = serde_json::from_str(&response.body)
        .unwrap_or_else(|e| panic!("JSON from {path} ({e}): {:?}", response.body));
    (response.status, value)
}

#[tokio::test]
async fn a_publish_reaches_a_subscriber_with_its_offset() {
    let (_server, addr) = start().await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: "news".into(),
        since: None,
        token: None,
    }))
    .await;
    assert!(matches!(
        raw.recv_skipping_pings().await,
        Some(ServerMessage::Subscribed(_))
    ));
    let (status, answer) = post(
        addr,
        "/api/publish",
        &[AUTH],
        r#"{"channel":"news","data":{"n":1}}"#,
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        (answer["channel"].as_str(), answer["offset"].as_u64()),
        (Some("news"), Some(1))
    );
    let Some(ServerMessage::Publication(p)) = raw.recv_skipping_pings().await else {
        panic!("a publication")
    };
    assert_eq!(
        (p.offset, p.data.parse::<Value>().expect("JSON")),
        (1, json!({"n": 1}))
    );
}

#[tokio::test]
async fn an_idempotency_key_publishes_once_and_answers_the_same() {
    let (_server, addr) = start().await;
    let body = r#"{"channel":"orders","data":"a","idempotency_key":"k-1"}"#;
    let first = post(addr, "/api/publish", &[AUTH], body).await;
    let again = post(addr, "/api/publish", &[AUTH], body).await;
    assert_eq!(first.0, 200);
    assert_eq!(again, first, "the stored answer");
    let next = post(
        addr,
        "/api/publish",
        &[AUTH],
        r#"{"channel":"orders","data":"b"}"#,
    )
    .await;
    assert_eq!(next.1["offset"], 2, "the retry took no offset");
    let other = post(
        addr,
        "/api/publish",
        &[AUTH],
        r#"{"channel":"orders","data":"c","idempotency_key":"k-1"}"#,
    )
    .await;
    assert_eq!(other.0, 409);
    assert_eq!(other.1["error"]["code"], "idempotency_conflict");
}

#[tokio::test]
async fn a_broadcast_publishes_on_every_channel_and_reports_each() {
    let (_server, addr) = start().await;
    let (status, answer) = post(
        addr,
        "/api/broadcast",
        &[AUTH],
        r#"{"channels":["a","b"],"data":1}"#,
    )
    .await;
    assert_eq!(status, 200);
    let results = answer["results"].as_array().expect("results");
    assert_eq!(results[0]["offset"], 1);
    assert_eq!(results[1]["channel"], "b");
    let (status, answer) = post(
        addr,
        "/api/broadcast",
        &[AUTH],
        r#"{"channels":["a","no spaces"],"data":1}"#,
    )
    .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (400, Some("bad_request"))
    );
}

#[tokio::test]
async fn bad_requests_get_their_documented_errors() {
    let (_server, addr) = start().await;
    let (status, answer) = post(addr, "/api/publish", &[], r#"{"channel":"a","data":1}"#).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (401, Some("unauthorized"))
    );
    let wrong = post(
        addr,
        "/api/publish",
        &["X-API-Key: nope"],
        r#"{"channel":"a","data":1}"#,
    )
    .await;
    assert_eq!(wrong.0, 401);
    let (status, answer) = post(addr, "/api/publish", &[AUTH], r#"{"channel":"a","dta":1}"#).await;
    assert_eq!(status, 400);
    assert!(
        answer["error"]["message"]
            .as_str()
            .expect("message")
            .contains("dta"),
        "{answer}"
    );
    let (status, answer) = post(addr, "/api/publish", &[AUTH], "not json").await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (400, Some("bad_request"))
    );
    let big = format!(r#"{{"channel":"a","data":"{}"}}"#, "x".repeat(5_000));
    let (status, answer) = post(addr, "/api/publish", &[AUTH], &big).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (413, Some("too_large"))
    );
    let info = http_call_with(addr, "GET", "/api/info", &["X-API-Key: test-api-key"], None).await;
    assert_eq!(info.status, 200);
    let info: Value = serde_json::from_str(&info.body).expect("JSON");
    assert_eq!(info["lifecycle"], "serving");
}

/// Every answer under /api/ is JSON, an unknown route and method too; and
/// the key check stays under /api/: another path no route serves is a
/// plain 404, not 401 (both found by the http_api fuzz target).
#[tokio::test]
async fn unknown_routes_and_methods_get_json_errors_and_other_paths_404() {
    let (_server, addr) = start().await;
    let (status, answer) = post(addr, "/api/nope", &[AUTH], "{}").await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (404, &json!("not_found"))
    );
    let put = http_call_with(addr, "PUT", "/api/publish", &[AUTH], Some("{}")).await;
    let answer: Value = serde_json::from_str(&put.body).expect("JSON");
    assert_eq!(
        (put.status, &answer["error"]["code"]),
        (405, &json!("method_not_allowed"))
    );
    let (status, answer) = post(addr, "/api/nope", &[], "{}").await;
    assert_eq!(
        (status, &answer["error"]["code"]),
        (401, &json!("unauthorized"))
    );
    let elsewhere = http_call_with(addr, "GET", "/favicon.ico", &[], None).await;
    assert_eq!(elsewhere.status, 404, "{}", elsewhere.body);
}
