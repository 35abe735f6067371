//! Backend answers that are too large: one over `max_response_bytes` is
//! cut while it streams (the proxy stops reading and drops the backend's
//! connection): a request is answered `too_large`, a connect closes 1013
//! `unavailable`. A result the proxy took but whose `response` frame would
//! pass `MAX_FRAME_LEN` is answered `too_large` too, never sent as an
//! oversized frame.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{ClientMessage, Reply, Request, ServerMessage, MAX_FRAME_LEN};
use belay_server::{Namespaces, Server};
use belay_standalone::{Backend, BackendAuth, RpcProxy};
use belay_test_support::sockets::{Closed, Raw};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const SOON: Duration = Duration::from_secs(5);

/// What the backend answers every call with.
#[derive(Clone, Copy)]
enum Answer {
    /// `200 {"result": "xxx…"}` with a result string of this many bytes.
    Result(usize),
    /// A chunked body that never ends (at most 4 096 chunks of 64 KiB,
    /// until the proxy hangs up).
    Endless,
}

/// Read one request (head and `Content-Length` body) off `tcp`.
async fn read_request(tcp: &mut TcpStream) -> Option<()> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = tcp.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        seen.extend_from_slice(&buf[..n]);
        let Some(end) = seen.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&seen[..end]).to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if seen.len() >= end + 4 + len {
            return Some(());
        }
    }
}

/// A backend on plain TCP, so the test controls every byte it sends;
/// `written` counts the body bytes it got out.
fn backend(listener: TcpListener, answer: Answer, written: Arc<AtomicUsize>) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let written = Arc::clone(&written);
            tokio::spawn(async move {
                if read_request(&mut tcp).await.is_none() {
                    return;
                }
                match answer {
                    Answer::Result(len) => {
                        let body = json!({"result": "x".repeat(len)}).to_string();
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        );
                        let _ = tcp.write_all(head.as_bytes()).await;
                        if tcp.write_all(body.as_bytes()).await.is_ok() {
                            written.fetch_add(body.len(), Ordering::Relaxed);
                        }
                    }
                    Answer::Endless => {
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
                        let _ = tcp.write_all(head.as_bytes()).await;
                        let chunk = vec![b' '; 64 << 10];
                        let framed = [
                            format!("{:x}\r\n", chunk.len()).into_bytes(),
                            chunk,
                            b"\r\n".to_vec(),
                        ]
                        .concat();
                        for _ in 0..4_096 {
                            let write = tokio::time::timeout(SOON, tcp.write_all(&framed)).await;
                            if !matches!(write, Ok(Ok(()))) {
                                return;
                            }
                            written.fetch_add(64 << 10, Ordering::Relaxed);
                        }
                    }
                }
            });
        }
    })
}

async fn server(backend: SocketAddr, timeout: Duration, max_response_bytes: usize) -> SocketAddr {
    let proxy = RpcProxy::new(&format!("http://{backend}/rpc"), timeout, 64)
        .expect("a proxy")
        .with_max_response_bytes(max_response_bytes);
    let server = Server::builder().methods(proxy.methods()).build();
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { server.serve(listener, server.router()).await });
    addr
}

async fn call(addr: SocketAddr) -> Reply {
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&ClientMessage::Request(Request {
        id: 1,
        method: "report".into(),
        params: json!({}),
        idem: None,
        timeout_ms: Some(30_000),
    }))
    .await;
    loop {
        match tokio::time::timeout(SOON, raw.recv_skipping_pings())
            .await
            .expect("an answer in time")
            .expect("open")
        {
            ServerMessage::Response(r) if r.id == 1 => return r.reply,
            _ => continue,
        }
    }
}

fn code(reply: &Reply) -> &str {
    match reply {
        Reply::Error(e) => &e.code,
        Reply::Result(r) => panic!("an error expected, got a result of {} bytes", r.get().len()),
    }
}

#[tokio::test]
async fn a_result_over_the_frame_limit_is_answered_too_large() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let written = Arc::new(AtomicUsize::new(0));
    // The proxy takes up to 8 MiB; the frame limit is 1 MiB.
    let addr = server(listener.local_addr().expect("addr"), SOON, 8 << 20).await;
    let _backend = backend(listener, Answer::Result(3 << 20), Arc::clone(&written));
    let reply = call(addr).await;
    assert_eq!(code(&reply), "too_large", "{reply:?}");
    assert!(
        written.load(Ordering::Relaxed) > MAX_FRAME_LEN,
        "the backend answered in full"
    );
}

#[tokio::test]
async fn an_endless_backend_answer_is_cut_at_the_limit() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let written = Arc::new(AtomicUsize::new(0));
    // A timeout far past the test's wait: only the byte bound can end it.
    let addr = server(
        listener.local_addr().expect("addr"),
        Duration::from_secs(60),
        1 << 20,
    )
    .await;
    let _backend = backend(listener, Answer::Endless, Arc::clone(&written));
    let reply = tokio::time::timeout(SOON, call(addr))
        .await
        .expect("answered before any timeout");
    assert_eq!(code(&reply), "too_large", "{reply:?}");
    // The proxy stopped reading at 1 MiB: what the backend got out is that
    // plus the sockets' buffers, nowhere near its 256 MiB.
    let sent = written.load(Ordering::Relaxed);
    assert!(sent < 32 << 20, "the backend wrote {sent} bytes");
}

#[tokio::test]
async fn an_endless_connect_answer_is_cut_at_the_limit_and_closes_1013() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}/connect", listener.local_addr().expect("addr"));
    let written = Arc::new(AtomicUsize::new(0));
    let _backend = backend(listener, Answer::Endless, Arc::clone(&written));
    // The default bound (1 MiB); a timeout far past the test's wait.
    let connect = Backend::new(&url, Duration::from_secs(60), 64).expect("url");
    let auth = BackendAuth::default().connect_through(connect);
    let addr = crate::common::node(auth, Namespaces::new()).await;
    let mut raw = Raw::open(addr).await;
    raw.send_text(r#"{"type":"connect","protocol":1,"token":"alice"}"#)
        .await;
    let Closed::Frame(code, reason) = raw.closed_within(SOON).await else {
        panic!("a close frame expected")
    };
    assert_eq!(code, 1013, "{reason}");
    assert!(reason.starts_with("unavailable: "), "{reason}");
    let sent = written.load(Ordering::Relaxed);
    assert!(sent < 32 << 20, "the backend wrote {sent} bytes");
}
