//! What a connection does with each frame from its peer: the liveness
//! budget for pings and pongs, the message budget for every data frame,
//! decoding, and the documented answer to bad input.

use belay_proto::message::{
    decode_client, ClientMessage, DecodeError, ErrorBody, MessageKind, Reply, Response,
    ServerMessage,
};
use belay_proto::server::{RateDecision, Violation};

use super::{Connection, ConnectionMeta, End, Stage};
use crate::metrics::Metrics;
use crate::requests;
use crate::ws::Message;

impl Connection {
    pub(super) fn on_frame(&mut self, message: Message, meta: &ConnectionMeta) -> Option<End> {
        let now = self.now();
        if let Stage::Open { heartbeat, .. } = &mut self.stage {
            heartbeat.handle_frame(now);
        }
        let handshake = matches!(self.stage, Stage::Handshake { .. });
        let bytes = match message {
            Message::Close(code) => return Some(End::PeerGone(code)),
            // Proof of life; answered (within the liveness budget) by the loop.
            Message::Ping(_) => return None,
            Message::Pong => return self.on_liveness_frame().err(),
            // Nothing but `connect` may come first (spec/PROTOCOL.md §2.7).
            Message::Binary(_) if handshake => return self.violate(Violation::NotConnectFirst),
            Message::Binary(_) => {
                Metrics::add(&self.shared.metrics.bad_frames);
                if let Err(end) = self.take_message_token(None) {
                    return end;
                }
                return self.violate(Violation::BinaryFrame);
            }
            Message::Text(bytes) => bytes,
        };
        // The codec has validated the UTF-8 already.
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return self.violate(Violation::InvalidUtf8);
        };
        let decoded = decode_client(text);
        if handshake {
            return self.on_handshake(now, decoded, meta);
        }
        match decoded {
            Ok(ClientMessage::Ping) => match self.on_liveness_frame() {
                Ok(true) => {
                    self.send(&ServerMessage::Pong);
                    None
                }
                Ok(false) => None,
                Err(end) => Some(end),
            },
            Ok(ClientMessage::Pong) => self.on_liveness_frame().err(),
            Ok(message) => {
                let id = match &message {
                    ClientMessage::Request(request) => Some(request.id),
                    _ => None,
                };
                if let Err(end) = self.take_message_token(id) {
                    return end;
                }
                self.on_message(message)
            }
            Err(DecodeError::TooLarge { .. }) => self.violate(Violation::FrameTooLarge),
            Err(error) => {
                Metrics::add(&self.shared.metrics.bad_frames);
                // A request whose id can be read still gets its one
                // response (spec/PROTOCOL.md §8.2).
                let id = match &error {
                    DecodeError::Invalid {
                        kind: MessageKind::Request,
                        ..
                    } => request_id(text),
                    _ => None,
                };
                if let Err(end) = self.take_message_token(id) {
                    return end;
                }
                match (id, &error) {
                    (Some(id), _) => {
                        self.shared.metrics.count_request("bad_request");
                        self.send(&ServerMessage::Response(Response {
                            id,
                            reply: Reply::Error(ErrorBody::new("bad_request", error.to_string())),
                        }));
                        None
                    }
                    (None, DecodeError::UnknownType { .. }) => self.violate(Violation::UnknownType),
                    (None, _) => self.violate(Violation::MalformedFrame),
                }
            }
        }
    }

    /// A liveness frame (ping or pong, JSON or WebSocket) arrived: `Ok(true)`
    /// if a ping may be answered, `Ok(false)` if it is over its budget (not
    /// answered), `Err` for a flood (close 4029).
    pub(super) fn on_liveness_frame(&mut self) -> Result<bool, End> {
        let now = self.now();
        match self.liveness.check(now) {
            RateDecision::Allow => Ok(true),
            RateDecision::Close { retry_after } => Err(self
                .violate(Violation::LivenessFlood { retry_after })
                .unwrap_or(End::Abrupt)),
            _ => Ok(false),
        }
    }

    /// Take a token from the message budget for a data frame (`request` is
    /// the id of the request it carries, if any). Over the budget the frame
    /// is answered `rate_limited` (`Err(None)`: go on without processing it)
    /// or, for a flood, closed (`Err(Some(end))`).
    pub(super) fn take_message_token(&mut self, request: Option<u64>) -> Result<(), Option<End>> {
        let now = self.now();
        match self.rate.check(now) {
            RateDecision::Allow => Ok(()),
            RateDecision::Close { retry_after } => {
                Err(self.violate(Violation::Flood { retry_after }))
            }
            RateDecision::Refuse { retry_after } => {
                let violation = Violation::RateLimited { retry_after };
                match request {
                    Some(id) => {
                        // A refused request still gets its one response.
                        self.shared.metrics.count_request("rate_limited");
                        self.respond(id, requests::refusal(violation));
                        Err(None)
                    }
                    None => Err(self.violate(violation)),
                }
            }
            _ => Err(None),
        }
    }
}

/// The `id` of a `request` frame that failed to decode, if it can be read.
fn request_id(text: &str) -> Option<u64> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value.get("id")?.as_u64()
}
