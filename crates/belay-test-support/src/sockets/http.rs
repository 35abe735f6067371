//! Plain HTTP over a fresh TCP connection (no client library, so a test
//! sees exactly what the server sends), and the server's `/metrics`.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpStream;

use super::SOON;

/// An HTTP/1.1 answer, read to the end (`Connection: close`).
#[derive(Debug)]
pub struct HttpResponse {
    pub status: u16,
    /// Header lines, lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

pub(crate) fn parse_head(head: &str) -> (u16, Vec<(String, String)>) {
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers)
}

/// A plain HTTP request over a fresh TCP connection (no client library, so
/// the test sees exactly what the server sends).
pub async fn http_call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> HttpResponse {
    http_call_with(addr, method, path, &[], body).await
}

/// [`http_call`] with extra request headers (`Name: value` each).
pub async fn http_call_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[&str],
    body: Option<&str>,
) -> HttpResponse {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let body = body.unwrap_or("");
    let content_type = if body.is_empty() {
        String::new()
    } else {
        "Content-Type: application/json\r\n".to_owned()
    };
    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{content_type}{extra}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    tokio::time::timeout(SOON, tcp.read_to_end(&mut raw))
        .await
        .expect("an HTTP answer within the bound")
        .expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete head");
    let (status, headers) = parse_head(head);
    HttpResponse {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// `POST /admin/fault/{name}` with a JSON body; returns the new state.
pub async fn fault(addr: SocketAddr, name: &str, body: &str) -> serde_json::Value {
    let response = http_call(addr, "POST", &format!("/admin/fault/{name}"), Some(body)).await;
    assert_eq!(response.status, 200, "{response:?}");
    serde_json::from_str(&response.body).expect("the admin API answers JSON")
}

/// A raw WebSocket upgrade request; the status line and headers of the answer.
pub async fn upgrade_head(addr: SocketAddr) -> HttpResponse {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    exchange(&mut tcp, upgrade_request(addr, "").as_bytes())
        .await
        .expect("an answer within the bound")
}

/// A TCP connection to `addr` from the loopback address `source` (any
/// 127.0.0.0/8 address is local on Linux), to play a second client IP.
pub async fn tcp_from(source: &str, addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    let local: SocketAddr = format!("{source}:0").parse().expect("source address");
    socket.bind(local).expect("bind the source address");
    socket.connect(addr).await.expect("connect")
}

/// Send `request` (raw bytes) on `tcp` and read the answer's head; `None`
/// if the server closed without answering.
pub async fn exchange(tcp: &mut TcpStream, request: &[u8]) -> Option<HttpResponse> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = tcp.write_all(request).await;
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(SOON, tcp.read(&mut buf))
            .await
            .expect("an answer or a close within the bound")
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let head = text.split("\r\n\r\n").next().filter(|h| !h.is_empty())?;
    let (status, headers) = parse_head(head);
    Some(HttpResponse {
        status,
        headers,
        body: String::new(),
    })
}

/// A WebSocket upgrade request for `/ws` with extra header lines.
pub fn upgrade_request(addr: SocketAddr, extra: &str) -> String {
    format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n{extra}\r\n"
    )
}

/// One value of the server's `/metrics` (0 when the series is absent).
pub async fn metric(addr: SocketAddr, series: &str) -> f64 {
    let body = http_call(addr, "GET", "/metrics", None).await.body;
    body.lines()
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse().ok())?
        })
        .unwrap_or(0.0)
}

/// Wait (polling `/metrics`, within `SOON`) until `series` satisfies `done`.
pub async fn metric_until(addr: SocketAddr, series: &str, done: impl Fn(f64) -> bool) -> f64 {
    let deadline = tokio::time::Instant::now() + SOON;
    loop {
        let value = metric(addr, series).await;
        if done(value) {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{series} = {value} within the bound"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
