//! The proxy to the application's backend: a client request becomes a
//! POST to the backend and settles exactly once, its error telling whether
//! the backend may have run it; a dead backend makes requests
//! `unavailable` (in flight ones fate-unknown) and leaves the connection
//! and its readiness alone; requests work again when it returns.

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::post;
use axum::{Json, Router};
use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage};
use belay_server::Server;
use belay_standalone::RpcProxy;
use belay_test_support::sockets::Raw;
use serde_json::{json, Value};
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::{JoinHandle, JoinSet};

const SOON: Duration = Duration::from_secs(5);

/// The backend: `orders.create` echoes what it was given, `slow` tells
/// `started` and answers after 2 s, `refuse` answers an error with a 422.
/// Aborting the task it returns kills it whole: its listener and every
/// connection.
async fn backend(listener: TcpListener, started: Arc<Notify>) -> JoinHandle<()> {
    let app = Router::new().route(
        "/rpc",
        post(move |Json(call): Json<Value>| async move {
            match call["method"].as_str() {
                Some("slow") => {
                    started.notify_one();
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    (axum::http::StatusCode::OK, Json(json!({"result": "late"})))
                }
                Some("refuse") => (
                    axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                    Json(json!({"error": {"code": "forbidden", "message": "not your order"}})),
                ),
                _ => (axum::http::StatusCode::OK, Json(json!({"result": call}))),
            }
        }),
    );
    tokio::spawn(async move {
        let mut connections = JoinSet::new();
        while let Ok((tcp, _)) = listener.accept().await {
            let service = TowerToHyperService::new(app.clone());
            connections.spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    })
}

async fn server(backend: SocketAddr) -> SocketAddr {
    let proxy = RpcProxy::new(
        &format!("http://{backend}/rpc"),
        Duration::from_millis(500),
        64,
    )
    .expect("a proxy");
    let server = Server::builder().methods(proxy.methods()).build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { server.serve(listener, server.router()).await });
    addr
}

fn request(id: u64, method: &str, idem: Option<&str>) -> ClientMessage {
    ClientMessage::Request(Request {
        id,
        method: method.into(),
        params: json!({"sku": "A1"}),
        idem: idem.map(str::to_owned),
        timeout_ms: Some(5_000),
    })
}

async fn reply(raw: &mut Raw, id: u64) -> Reply {
    loop {
        match tokio::time::timeout(SOON, raw.recv_skipping_pings())
            .await
            .expect("an answer in time")
            .expect("open")
        {
            ServerMessage::Response(r) if r.id == id => return r.reply,
            _ => continue,
        }
    }
}

fn code(reply: &Reply) -> &str {
    match reply {
        Reply::Error(e) => &e.code,
        Reply::Result(r) => panic!("an error expected, got {r:?}"),
    }
}

#[tokio::test]
async fn a_request_becomes_a_post_and_its_answer_comes_back() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = server(listener.local_addr().expect("addr")).await;
    let _backend = backend(listener, Arc::new(Notify::new())).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&request(1, "orders.create", Some("k-1"))).await;
    let Reply::Result(result) = reply(&mut raw, 1).await else {
        panic!("a result")
    };
    let seen: Value = result.parse().expect("JSON");
    assert_eq!(seen["method"], "orders.create");
    assert_eq!(seen["params"], json!({"sku": "A1"}));
    assert_eq!(seen["user"], "anonymous");
    assert_eq!(seen["idempotency_key"], "k-1");
    raw.send(&request(2, "refuse", None)).await;
    let refused = reply(&mut raw, 2).await;
    assert_eq!(code(&refused), "forbidden", "the backend's own error");
    raw.send(&request(3, "slow", None)).await;
    assert_eq!(
        code(&reply(&mut raw, 3).await),
        "timeout",
        "fate unknown after 500 ms"
    );
}

#[tokio::test]
async fn a_dead_backend_makes_requests_unavailable_and_a_returning_one_answers_again() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let backend_addr = listener.local_addr().expect("addr");
    let addr = server(backend_addr).await;
    let started = Arc::new(Notify::new());
    let running = backend(listener, Arc::clone(&started)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&request(1, "orders.create", None)).await;
    assert!(matches!(reply(&mut raw, 1).await, Reply::Result(_)));

    // In flight when the backend dies: fate unknown, within the timeout.
    raw.send(&request(2, "slow", None)).await;
    tokio::time::timeout(SOON, started.notified())
        .await
        .expect("the backend got the call");
    running.abort();
    let _ = running.await;
    let lost = reply(&mut raw, 2).await;
    assert!(matches!(code(&lost), "internal" | "timeout"), "{lost:?}");

    // Nobody listens: not executed, safe to retry.
    raw.send(&request(3, "orders.create", None)).await;
    assert_eq!(code(&reply(&mut raw, 3).await), "unavailable");

    // The connection never noticed: pings are answered, it is still open.
    raw.send(&ClientMessage::Ping).await;
    let pong = tokio::time::timeout(SOON, raw.recv())
        .await
        .expect("in time");
    assert!(matches!(pong, Some(ServerMessage::Pong)), "{pong:?}");

    // Back on the same port: requests are answered again.
    let listener = TcpListener::bind(backend_addr)
        .await
        .expect("rebind the backend's port");
    let _back = backend(listener, started).await;
    raw.send(&request(4, "orders.create", None)).await;
    assert!(matches!(reply(&mut raw, 4).await, Reply::Result(_)));
}
