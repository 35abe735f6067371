//! The load clients' frames in either codec (spec/PROTOCOL.md §1.8): a
//! session opened with a subprotocol offer, frames told apart by their
//! kind without a full decode (JSON: the first `"type"`; binary: the
//! two-byte code), and the few fields the loads read.
//!
//! JSON frames are read the way [`crate::clients::websocket`] always read them, so a
//! JSON run measures what the earlier benchmarks measured.

use std::net::IpAddr;
use std::time::Duration;

use belay_proto::message::{
    decode_server_binary, encode_client_binary, ClientMessage, Codec, MessageKind, Reply,
    ServerMessage,
};
use bytes::Bytes;
use futures_util::SinkExt;
use http::header::SEC_WEBSOCKET_PROTOCOL;
use http::HeaderValue;
use tokio_websockets::{ClientBuilder, Message};

use crate::clients::target::Target;
use crate::clients::websocket::{self, Session};
use crate::LoadError;

/// One frame from the server.
#[derive(Debug)]
pub struct Frame {
    binary: bool,
    bytes: Bytes,
}

impl Frame {
    /// Its message kind, if it names one this side knows.
    pub fn kind(&self) -> Option<MessageKind> {
        if self.binary {
            let [hi, lo, ..] = self.bytes[..] else {
                return None;
            };
            MessageKind::from_code(u16::from_be_bytes([hi, lo]))
        } else {
            websocket::message_type(self.text()).and_then(MessageKind::from_name)
        }
    }

    /// The unsigned integer after the first `"key":` in the frame: a field
    /// of a JSON frame, or of the JSON payload a binary frame carries.
    pub fn payload_u64(&self, key: &str) -> Option<u64> {
        let pattern = format!("\"{key}\":");
        let at = find(&self.bytes, pattern.as_bytes())? + pattern.len();
        let digits = &self.bytes[at..];
        let end = digits
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(digits.len());
        std::str::from_utf8(&digits[..end]).ok()?.parse().ok()
    }

    /// Whether it is a successful `response` to request `id`.
    pub fn is_result_for(&self, id: u64) -> bool {
        if self.binary {
            matches!(
                decode_server_binary(&self.bytes),
                Ok(ServerMessage::Response(r)) if r.id == id && matches!(r.reply, Reply::Result(_))
            )
        } else {
            let text = self.text();
            websocket::message_type(text) == Some("response")
                && websocket::field_u64(text, "id") == Some(id)
                && !text.contains("\"error\":")
        }
    }

    /// The frame as text (a binary frame: lossily), for error messages.
    pub fn describe(&self) -> String {
        if self.binary {
            format!(
                "{} binary bytes: {:02x?}",
                self.bytes.len(),
                &self.bytes[..self.bytes.len().min(16)]
            )
        } else {
            self.text().to_owned()
        }
    }

    fn text(&self) -> &str {
        std::str::from_utf8(&self.bytes).unwrap_or("")
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// `message` as a frame of `codec`.
pub fn frame(codec: Codec, message: &ClientMessage) -> Message {
    match codec {
        Codec::Binary => Message::binary(encode_client_binary(message)),
        _ => Message::text(belay_proto::message::encode_client(message)),
    }
}

/// Upgrade offering `codec` (JSON: no offer, as before), send `connect`
/// and wait for `welcome` (answering pings), all within `bound`. A server
/// that does not answer the binary offer is an error: the load would not
/// measure what it says.
pub async fn open(
    target: &Target,
    source: Option<IpAddr>,
    bound: Duration,
    codec: Codec,
) -> Result<Session, LoadError> {
    if codec == Codec::Json {
        return websocket::open(target, source, bound).await;
    }
    let work = async {
        let stream = websocket::dial(target.addr, source).await?;
        let offer = HeaderValue::from_static(codec.subprotocol());
        let (mut ws, response) = ClientBuilder::from_uri(target.uri.clone())
            .add_header(SEC_WEBSOCKET_PROTOCOL, offer)?
            .connect_on(stream)
            .await?;
        let answered = response.headers().get(SEC_WEBSOCKET_PROTOCOL);
        if answered.and_then(|v| v.to_str().ok()) != Some(codec.subprotocol()) {
            return Err(LoadError::Protocol(format!(
                "the server answered the {} offer with {answered:?}",
                codec.subprotocol()
            )));
        }
        ws.send(frame(codec, &connect())).await?;
        loop {
            let next = next_frame(&mut ws).await?;
            match next.kind() {
                Some(MessageKind::Welcome) => return Ok(ws),
                Some(MessageKind::Ping) => ws.send(frame(codec, &ClientMessage::Pong)).await?,
                _ => {
                    return Err(LoadError::Protocol(format!(
                        "expected welcome, got {}",
                        next.describe()
                    )))
                }
            }
        }
    };
    tokio::time::timeout(bound, work)
        .await
        .map_err(|_| LoadError::Timeout("opening a session"))?
}

fn connect() -> ClientMessage {
    ClientMessage::Connect(belay_proto::message::Connect {
        protocol: belay_proto::message::PROTOCOL_VERSION,
        token: None,
        session: None,
    })
}

/// The next text or binary frame (WebSocket pings and pongs are the
/// codec's); an error when the connection closes.
pub async fn next_frame(ws: &mut Session) -> Result<Frame, LoadError> {
    let message = websocket::next_data(ws).await?;
    Ok(Frame {
        binary: message.is_binary(),
        bytes: Bytes::from(message.into_payload()),
    })
}

/// The next frame that is not a Belay `ping`; pings are answered in `codec`.
pub async fn next_non_ping(ws: &mut Session, codec: Codec) -> Result<Frame, LoadError> {
    loop {
        let next = next_frame(ws).await?;
        if next.kind() == Some(MessageKind::Ping) {
            ws.send(frame(codec, &ClientMessage::Pong)).await?;
        } else {
            return Ok(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use belay_proto::message::{encode_server_binary, Publication, RawJson, Response};

    fn binary(message: &ServerMessage) -> Frame {
        Frame {
            binary: true,
            bytes: Bytes::from(encode_server_binary(message)),
        }
    }

    #[test]
    fn a_binary_publication_is_classified_and_its_stamp_read() {
        let frame = binary(&ServerMessage::Publication(Publication {
            channel: "bench".into(),
            epoch: "e".into(),
            offset: 7,
            data: RawJson::from_json(r#"{"n":3,"t":1700000000123456}"#.into()).unwrap(),
        }));
        assert_eq!(frame.kind(), Some(MessageKind::Publication));
        assert_eq!(frame.payload_u64("t"), Some(1_700_000_000_123_456));
    }

    #[test]
    fn results_are_told_from_errors_in_both_codecs() {
        let ok = Response {
            id: 4,
            reply: Reply::Result(RawJson::from_json("4".into()).unwrap()),
        };
        assert!(binary(&ServerMessage::Response(ok.clone())).is_result_for(4));
        assert!(!binary(&ServerMessage::Response(ok)).is_result_for(5));
        let text = Frame {
            binary: false,
            bytes: Bytes::from_static(br#"{"type":"response","id":4,"result":4}"#),
        };
        assert!(text.is_result_for(4));
        assert_eq!(text.kind(), Some(MessageKind::Response));
    }
}
