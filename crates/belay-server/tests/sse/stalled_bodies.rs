//! A POST body that never finishes holds nothing for long: every body read
//! of the fallback (open, send, close) has a deadline, `body_timeout`;
//! past it the request is answered 408 and its connection closed, freeing
//! its slot among the connections not yet upgraded, so others (and
//! `/healthz`) get in again.

use std::time::Duration;

use belay_server::{Server, ServerConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::common::{self, exchange, http_call, tcp_from, SseRaw, SOON};
use crate::server;

const BODY_TIMEOUT: Duration = Duration::from_millis(300);

/// `POST path` announcing a 100-byte body and sending 10 of it, from the
/// loopback address `source`.
async fn stalled(
    addr: std::net::SocketAddr,
    source: &str,
    path: &str,
    headers: &[String],
) -> TcpStream {
    let mut tcp = tcp_from(source, addr).await;
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\n{extra}Content-Length: 100\r\n\r\n0123456789"
    );
    tcp.write_all(request.as_bytes()).await.expect("write");
    tcp
}

/// One series of the server's metrics, read in process.
fn gauge(server: &Server, series: &str) -> f64 {
    server
        .render_metrics()
        .lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok())?
        })
        .unwrap_or(0.0)
}

/// Wait (within `SOON`) until `series` satisfies `done`.
async fn gauge_until(server: &Server, series: &str, done: impl Fn(f64) -> bool) {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let value = gauge(server, series);
        if done(value) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{series} = {value} within the bound"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn stalled_close_bodies_are_answered_408_and_healthz_answers_again() {
    let config = ServerConfig::default()
        .with_pending_upgrades(8, 64)
        .with_body_timeout(BODY_TIMEOUT);
    let server = server(config);
    let addr = common::start(&server).await;
    let header = vec!["Belay-Stream: nobody".to_owned()];
    let mut stalls = Vec::new();
    for n in 2..10 {
        stalls.push(stalled(addr, &format!("127.0.0.{n}"), "/sse/close", &header).await);
    }
    gauge_until(&server, "belay_pending_upgrades", |n| n >= 8.0).await;
    for tcp in &mut stalls {
        let answer = exchange(tcp, b"").await.expect("an answer");
        assert_eq!(answer.status, 408, "{answer:?}");
    }
    gauge_until(&server, "belay_pending_upgrades", |n| n == 0.0).await;
    assert_eq!(http_call(addr, "GET", "/healthz", None).await.status, 200);
}

#[tokio::test]
async fn a_stalled_open_is_answered_408_and_makes_no_session() {
    let server = server(ServerConfig::default().with_body_timeout(BODY_TIMEOUT));
    let addr = common::start(&server).await;
    let mut tcp = stalled(addr, "127.0.0.2", "/sse", &[]).await;
    let answer = exchange(&mut tcp, b"").await.expect("an answer");
    assert_eq!(answer.status, 408, "{answer:?}");
    gauge_until(&server, "belay_pending_upgrades", |n| n == 0.0).await;
    assert_eq!(gauge(&server, "belay_sse_streams"), 0.0);
}

#[tokio::test]
async fn a_stalled_send_is_answered_408_and_ends_its_stream() {
    let server = server(ServerConfig::default().with_body_timeout(BODY_TIMEOUT));
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let headers = vec![
        format!("Belay-Stream: {}", sse.stream),
        "Belay-Seq: 1".to_owned(),
    ];
    let mut tcp = stalled(addr, "127.0.0.2", "/sse/send", &headers).await;
    let answer = exchange(&mut tcp, b"").await.expect("an answer");
    assert_eq!(answer.status, 408, "{answer:?}");
    // Its messages are lost in order: the stream cannot go on past them.
    assert_eq!(
        sse.closed_within(SOON).await,
        None,
        "ended without close: 1006"
    );
    gauge_until(&server, "belay_sse_streams", |n| n == 0.0).await;
}
