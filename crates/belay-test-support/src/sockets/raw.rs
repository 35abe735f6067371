//! A raw protocol test client: one WebSocket session to a Belay server,
//! driven frame by frame.

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::message::{
    decode_server, encode_client, ClientMessage, Connect, Request, Response, ServerMessage,
    Subscribe,
};
use futures_util::{SinkExt, StreamExt};
use http::Uri;
use tokio::net::TcpStream;
use tokio_websockets::{ClientBuilder, MaybeTlsStream, Message, WebSocketStream};

use super::SOON;

/// A raw Belay session over WebSocket: frames in, frames out, nothing
/// decided for the test (no reconnect, no heartbeat of its own).
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

    /// Subscribe to `channel` (from now) and wait for its confirmation.
    pub async fn subscribed(&mut self, channel: &str) {
        self.send(&ClientMessage::Subscribe(Subscribe {
            channel: channel.into(),
            since: None,
            token: None,
        }))
        .await;
        match self.recv_skipping_pings().await {
            Some(ServerMessage::Subscribed(s)) => assert_eq!(s.channel, channel),
            other => panic!("subscribed to {channel} expected, got {other:?}"),
        }
    }

    /// Send request `id`: `method` with `params` (not waiting for the
    /// response).
    pub async fn request(&mut self, id: u64, method: &str, params: serde_json::Value) {
        self.send(&ClientMessage::Request(Request {
            id,
            method: method.into(),
            params,
            idem: None,
            timeout_ms: None,
        }))
        .await;
    }

    /// Call `method` with `params` as request `id` and wait for its
    /// response (the connection's task has handled everything sent before).
    pub async fn answered(&mut self, id: u64, method: &str, params: serde_json::Value) -> Response {
        self.request(id, method, params).await;
        match self.recv_skipping_pings().await {
            Some(ServerMessage::Response(r)) if r.id == id => r,
            other => panic!("response {id} expected, got {other:?}"),
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

impl Raw {
    /// Open a session's socket from the loopback address `source`.
    pub async fn open_from(source: &str, addr: SocketAddr) -> Result<Raw, tokio_websockets::Error> {
        let tcp = super::http::tcp_from(source, addr).await;
        let uri: Uri = format!("ws://{addr}/ws").parse().expect("uri");
        let (ws, _) = ClientBuilder::from_uri(uri)
            .connect_on(MaybeTlsStream::Plain(tcp))
            .await?;
        Ok(Raw { ws })
    }
}
