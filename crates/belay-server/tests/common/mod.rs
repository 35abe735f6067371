//! A raw WebSocket test client and a server on a loopback port.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::message::{decode_server, encode_client, ClientMessage, Connect, ServerMessage};
use belay_server::Server;
use futures_util::{SinkExt, StreamExt};
use http::Uri;
use tokio::net::{TcpListener, TcpStream};
use tokio_websockets::{ClientBuilder, MaybeTlsStream, Message, WebSocketStream};

/// A generous bound for anything that should happen "at once".
pub const SOON: Duration = Duration::from_secs(5);

pub async fn start(server: &Server) -> SocketAddr {
    start_with(server, server.router()).await
}

pub async fn start_with(server: &Server, router: axum::Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    let server = server.clone();
    tokio::spawn(async move {
        let _ = server.serve(listener, router).await;
    });
    addr
}

pub struct Raw {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

/// How a connection ended, as the client saw it.
#[derive(Debug, PartialEq, Eq)]
pub enum Closed {
    Frame(u16, String),
    NoFrame,
}

impl Raw {
    pub async fn open(addr: SocketAddr) -> Raw {
        Raw::open_with(addr, &[]).await
    }

    pub async fn open_with(addr: SocketAddr, headers: &[(&'static str, &str)]) -> Raw {
        let uri: Uri = format!("ws://{addr}/ws").parse().expect("uri");
        let mut builder = ClientBuilder::from_uri(uri);
        for (name, value) in headers {
            builder = builder
                .add_header(
                    http::HeaderName::from_static(name),
                    http::HeaderValue::from_str(value).expect("header"),
                )
                .expect("allowed header");
        }
        let (ws, _) = builder.connect().await.expect("upgrade");
        Raw { ws }
    }

    /// Open and complete the handshake; returns the welcome.
    pub async fn connected(addr: SocketAddr, token: Option<&str>) -> (Raw, ServerMessage) {
        let mut raw = Raw::open(addr).await;
        raw.send(&ClientMessage::Connect(Connect {
            protocol: 1,
            token: token.map(str::to_owned),
            session: None,
        }))
        .await;
        let welcome = raw.recv().await.expect("welcome");
        assert!(matches!(welcome, ServerMessage::Welcome(_)), "{welcome:?}");
        (raw, welcome)
    }

    pub async fn send(&mut self, message: &ClientMessage) {
        self.send_text(&encode_client(message)).await;
    }

    pub async fn send_text(&mut self, text: &str) {
        self.ws
            .send(Message::text(text.to_owned()))
            .await
            .expect("send");
    }

    /// The next protocol message, skipping nothing; `None` when closed.
    pub async fn recv(&mut self) -> Option<ServerMessage> {
        loop {
            let frame = tokio::time::timeout(SOON, self.ws.next())
                .await
                .expect("a frame within the bound")?;
            let message = frame.ok()?;
            if message.is_close() {
                return None;
            }
            if let Some(text) = message.as_text() {
                return Some(decode_server(text).expect("the server sends valid frames"));
            }
        }
    }

    /// The next message that is not a server ping (answering pings).
    pub async fn recv_skipping_pings(&mut self) -> Option<ServerMessage> {
        loop {
            match self.recv().await? {
                ServerMessage::Ping => self.send(&ClientMessage::Pong).await,
                other => return Some(other),
            }
        }
    }

    /// Read until the connection closes, within `bound`.
    pub async fn closed_within(&mut self, bound: Duration) -> Closed {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let frame = tokio::time::timeout_at(deadline, self.ws.next())
                .await
                .expect("the connection closes within the bound");
            match frame {
                None | Some(Err(_)) => return Closed::NoFrame,
                Some(Ok(message)) => {
                    if let Some((code, reason)) = message.as_close() {
                        return Closed::Frame(u16::from(code), reason.to_owned());
                    }
                }
            }
        }
    }
}

/// What `Raw::next_within` saw.
#[derive(Debug)]
pub enum Next {
    Message(ServerMessage),
    Closed(Closed),
    /// Nothing arrived within the bound; the socket is still open.
    Silent,
}

impl Raw {
    /// The client side's local address (to find this connection in server events).
    pub fn local_addr(&self) -> SocketAddr {
        match self.ws.get_ref() {
            MaybeTlsStream::Plain(tcp) => tcp.local_addr().expect("local addr"),
            #[allow(unreachable_patterns)]
            _ => unreachable!("the tests use plain TCP"),
        }
    }

    /// The next protocol message, a close, or silence for `bound`.
    pub async fn next_within(&mut self, bound: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let Ok(frame) = tokio::time::timeout_at(deadline, self.ws.next()).await else {
                return Next::Silent;
            };
            match frame {
                None | Some(Err(_)) => return Next::Closed(Closed::NoFrame),
                Some(Ok(message)) => {
                    if let Some((code, reason)) = message.as_close() {
                        return Next::Closed(Closed::Frame(u16::from(code), reason.to_owned()));
                    }
                    if let Some(text) = message.as_text() {
                        return Next::Message(
                            decode_server(text).expect("the server sends valid frames"),
                        );
                    }
                }
            }
        }
    }
}

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

fn parse_head(head: &str) -> (u16, Vec<(String, String)>) {
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let body = body.unwrap_or("");
    let content_type = if body.is_empty() {
        String::new()
    } else {
        "Content-Type: application/json\r\n".to_owned()
    };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{content_type}\
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    let mut buf = [0u8; 1024];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(SOON, tcp.read(&mut buf))
            .await
            .expect("an answer within the bound")
            .expect("read");
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    let (status, headers) = parse_head(head);
    HttpResponse {
        status,
        headers,
        body: String::new(),
    }
}

/// A TCP connection to `addr` from the loopback address `source` (any
/// 127.0.0.0/8 address is local on Linux), to play a second client IP.
pub async fn tcp_from(source: &str, addr: SocketAddr) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    let local: SocketAddr = format!("{source}:0").parse().expect("source address");
    socket.bind(local).expect("bind the source address");
    socket.connect(addr).await.expect("connect")
}

impl Raw {
    /// Open a session's socket from the loopback address `source`.
    pub async fn open_from(source: &str, addr: SocketAddr) -> Result<Raw, tokio_websockets::Error> {
        let tcp = tcp_from(source, addr).await;
        let uri: Uri = format!("ws://{addr}/ws").parse().expect("uri");
        let (ws, _) = ClientBuilder::from_uri(uri)
            .connect_on(MaybeTlsStream::Plain(tcp))
            .await?;
        Ok(Raw { ws })
    }
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
