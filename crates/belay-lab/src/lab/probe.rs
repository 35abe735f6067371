//! The lab's own look at a channel: a fresh session subscribes and reads
//! the position the server confirms, i.e. the last offset published.

use std::net::SocketAddr;
use std::time::Duration;

use belay_proto::message::{
    decode_server, encode_client, ClientMessage, Connect, ServerMessage, Subscribe,
};
use futures_util::{SinkExt, StreamExt};
use tokio_websockets::{ClientBuilder, Message};

/// A channel's current position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    pub(crate) epoch: String,
    pub(crate) offset: u64,
}

/// Subscribe to `channel` on the server at `addr` (with `token` where the
/// server checks them) and return the position it confirms; the session is
/// closed afterwards.
pub(crate) async fn position(
    addr: SocketAddr,
    channel: &str,
    token: Option<&str>,
) -> Result<Position, String> {
    let look = async {
        let uri: http::Uri = format!("ws://{addr}/ws")
            .parse()
            .map_err(|e| format!("uri: {e}"))?;
        let (mut ws, _) = ClientBuilder::from_uri(uri)
            .connect()
            .await
            .map_err(|e| format!("probe upgrade: {e}"))?;
        for message in [
            ClientMessage::Connect(Connect {
                protocol: 1,
                token: token.map(str::to_owned),
                session: None,
            }),
            ClientMessage::Subscribe(Subscribe {
                channel: channel.to_owned(),
                since: None,
                token: None,
            }),
        ] {
            ws.send(Message::text(encode_client(&message)))
                .await
                .map_err(|e| format!("probe send: {e}"))?;
        }
        while let Some(frame) = ws.next().await {
            let frame = frame.map_err(|e| format!("probe read: {e}"))?;
            let Some(text) = frame.as_text() else {
                continue;
            };
            if let Ok(ServerMessage::Subscribed(s)) = decode_server(text) {
                let _ = ws.close().await;
                return Ok(Position {
                    epoch: s.epoch,
                    offset: s.offset,
                });
            }
        }
        Err("probe: the server closed before confirming".to_owned())
    };
    tokio::time::timeout(Duration::from_secs(5), look)
        .await
        .map_err(|_| "probe: no confirmation within 5 s".to_owned())?
}
