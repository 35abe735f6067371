//! A raw Belay WebSocket client (tokio-websockets), as in belay-server's tests.

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::message::{decode_server, encode_client, ClientMessage, Connect, ServerMessage};
use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpStream;
use tokio_websockets::{ClientBuilder, MaybeTlsStream, Message, WebSocketStream};

/// What arrived within a bound.
#[derive(Debug)]
pub enum Next {
    /// A protocol message.
    Message(ServerMessage),
    /// A close frame with its code, or `None` for an end without one.
    Closed(Option<u16>),
    /// Nothing; the socket is still open.
    Silent,
}

/// One session's socket.
pub struct Session {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
}

impl Session {
    /// Upgrade at `addr` and complete the Belay handshake.
    pub async fn connect(addr: SocketAddr) -> Session {
        let uri: http::Uri = format!("ws://{addr}/ws").parse().expect("uri");
        let (ws, _) = ClientBuilder::from_uri(uri)
            .connect()
            .await
            .expect("upgrade");
        let mut session = Session { ws };
        session
            .send(&ClientMessage::Connect(Connect {
                protocol: 1,
                token: None,
                session: None,
            }))
            .await;
        match session.next_within(super::SOON).await {
            Next::Message(ServerMessage::Welcome(_)) => session,
            other => panic!("expected a welcome, got {other:?}"),
        }
    }

    /// Send one protocol message.
    pub async fn send(&mut self, message: &ClientMessage) {
        let text = encode_client(message);
        self.ws.send(Message::text(text)).await.expect("send");
    }

    /// The next message, a close, or silence for `bound`.
    pub async fn next_within(&mut self, bound: Duration) -> Next {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let Ok(frame) = tokio::time::timeout_at(deadline, self.ws.next()).await else {
                return Next::Silent;
            };
            let Some(Ok(frame)) = frame else {
                return Next::Closed(None);
            };
            if let Some((code, _)) = frame.as_close() {
                return Next::Closed(Some(u16::from(code)));
            }
            if let Some(text) = frame.as_text() {
                return Next::Message(decode_server(text).expect("valid frames"));
            }
        }
    }
}
