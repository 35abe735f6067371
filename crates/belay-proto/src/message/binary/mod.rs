//! The compact binary codec (spec/PROTOCOL.md §1.8): every frame is the
//! message's two-byte code ([`MessageKind::code`], big-endian) and a body of
//! the same fields as the JSON object, in a fixed order per message, each
//! in one of four forms:
//!
//! ```text
//!   uint  unsigned LEB128, the shortest form, at most 10 bytes
//!   str   uint length, then that many bytes of UTF-8
//!   json  uint length, then that many bytes of JSON text (one value,
//!         opaque to the codec: payloads are never re-encoded)
//!   bool  one byte, 0 or 1
//! ```
//!
//! A message with optional fields starts its body with a `flags` uint: bit
//! `i` set when its `i`-th optional field is there. Bits and trailing bytes
//! past the fields this side knows are ignored (a newer peer's additions),
//! as unknown JSON fields are. An unknown code is
//! [`DecodeError::UnknownType`] (skipped, like an unknown `type`).
//!
//! Decoding never panics: a frame shorter than its code is
//! [`DecodeError::MissingType`], a field that does not fit in the frame or
//! is not what its form says is [`DecodeError::Invalid`].

mod read;
mod write;

use read::Reader;
use write::Writer;

use super::{
    ClientMessage, Connect, DecodeError, ErrorBody, MessageKind, Pacing, Publication,
    ReconnectAdvice, Refresh, Refreshed, Reply, Request, Response, ServerMessage, SubExpiring,
    SubRefresh, Subscribe, Subscribed, Unsubscribe, Unsubscribed, Welcome, MAX_FRAME_LEN,
};
use crate::message::StreamPosition;

/// Encode a client message as a binary frame.
pub fn encode_client_binary(message: &ClientMessage) -> Vec<u8> {
    let mut w = Writer::new(message.kind());
    match message {
        ClientMessage::Connect(c) => {
            w.flags(&[c.token.is_some(), c.session.is_some()]);
            w.uint(u64::from(c.protocol));
            w.opt_str(c.token.as_deref());
            w.opt_str(c.session.as_deref());
        }
        ClientMessage::Ping | ClientMessage::Pong => {}
        ClientMessage::Refresh(r) => w.str(&r.token),
        ClientMessage::Request(r) => {
            w.flags(&[r.idem.is_some(), r.timeout_ms.is_some()]);
            w.uint(r.id);
            w.str(&r.method);
            w.json(&r.params.to_string());
            w.opt_str(r.idem.as_deref());
            w.opt_uint(r.timeout_ms);
        }
        ClientMessage::Subscribe(s) => {
            w.flags(&[s.since.is_some(), s.token.is_some()]);
            w.str(&s.channel);
            if let Some(since) = &s.since {
                w.str(&since.epoch);
                w.uint(since.offset);
            }
            w.opt_str(s.token.as_deref());
        }
        ClientMessage::Unsubscribe(u) => w.str(&u.channel),
        ClientMessage::SubRefresh(s) => {
            w.str(&s.channel);
            w.str(&s.token);
        }
    }
    w.finish()
}

/// Encode a server message as a binary frame.
pub fn encode_server_binary(message: &ServerMessage) -> Vec<u8> {
    let mut w = Writer::new(message.kind());
    match message {
        ServerMessage::Welcome(m) => {
            w.flags(&[
                m.ping_interval_ms.is_some(),
                m.pacing.is_some(),
                m.expires_in_ms.is_some(),
                m.pacing.and_then(|p| p.origin_ms).is_some(),
            ]);
            w.str(&m.session);
            w.uint(u64::from(m.protocol));
            w.opt_uint(m.ping_interval_ms);
            if let Some(p) = &m.pacing {
                w.uint(p.period_ms);
                w.uint(p.phase_ms);
            }
            w.opt_uint(m.expires_in_ms);
            w.opt_uint(m.pacing.and_then(|p| p.origin_ms));
        }
        ServerMessage::Ping | ServerMessage::Pong => {}
        ServerMessage::Refreshed(m) => {
            w.flags(&[m.expires_in_ms.is_some()]);
            w.opt_uint(m.expires_in_ms);
        }
        ServerMessage::Response(m) => {
            w.uint(m.id);
            match &m.reply {
                Reply::Result(result) => {
                    w.byte(0);
                    w.json(result.get());
                }
                Reply::Error(error) => {
                    w.byte(1);
                    error_body(&mut w, error);
                }
            }
        }
        ServerMessage::Subscribed(m) => {
            w.str(&m.channel);
            w.str(&m.epoch);
            w.uint(m.offset);
            w.bool(m.recovered);
        }
        ServerMessage::Unsubscribed(m) => {
            w.str(&m.channel);
            w.str(&m.code);
            w.str(&m.reason);
        }
        ServerMessage::SubExpiring(m) => {
            w.str(&m.channel);
            w.uint(m.expires_in_ms);
        }
        ServerMessage::Publication(m) => publication(&mut w, m),
        ServerMessage::Reconnect(m) => {
            w.flags(&[m.message.is_some()]);
            w.str(&m.reason);
            w.uint(m.min_delay_ms);
            w.uint(m.max_delay_ms);
            w.opt_str(m.message.as_deref());
        }
        ServerMessage::Error(e) => error_body(&mut w, e),
    }
    w.finish()
}

/// A publication's frame from its parts, for a fan-out that encodes once
/// and sends the same bytes to every subscriber.
pub fn encode_publication_binary(publication: &Publication) -> Vec<u8> {
    let mut w = Writer::new(MessageKind::Publication);
    self::publication(&mut w, publication);
    w.finish()
}

fn publication(w: &mut Writer, m: &Publication) {
    w.str(&m.channel);
    w.str(&m.epoch);
    w.uint(m.offset);
    w.json(m.data.get());
}

fn error_body(w: &mut Writer, e: &ErrorBody) {
    w.flags(&[e.retry_after_ms.is_some()]);
    w.str(&e.code);
    w.str(&e.message);
    w.opt_uint(e.retry_after_ms);
}

/// Decode a binary frame the client received.
pub fn decode_server_binary(frame: &[u8]) -> Result<ServerMessage, DecodeError> {
    let (kind, mut r) = open(frame)?;
    let message = match kind {
        MessageKind::Welcome => {
            let f = r.flags()?;
            let session = r.string()?;
            let protocol = r.uint32()?;
            let ping_interval_ms = r.opt_uint(f, 0)?;
            let pacing = if f.has(1) {
                Some((r.uint()?, r.uint()?))
            } else {
                None
            };
            let expires_in_ms = r.opt_uint(f, 2)?;
            // The plan's origin belongs to the pacing: without pacing it is
            // read (the frame stays well-formed) and dropped.
            let origin_ms = r.opt_uint(f, 3)?;
            let pacing = pacing.map(|(period_ms, phase_ms)| Pacing {
                period_ms,
                phase_ms,
                origin_ms,
            });
            ServerMessage::Welcome(Welcome {
                session,
                protocol,
                ping_interval_ms,
                pacing,
                expires_in_ms,
            })
        }
        MessageKind::Ping => ServerMessage::Ping,
        MessageKind::Pong => ServerMessage::Pong,
        MessageKind::Refreshed => {
            let f = r.flags()?;
            ServerMessage::Refreshed(Refreshed {
                expires_in_ms: r.opt_uint(f, 0)?,
            })
        }
        MessageKind::Response => {
            let id = r.uint()?;
            let reply = match r.byte()? {
                0 => Reply::Result(r.json()?),
                1 => Reply::Error(read_error_body(&mut r)?),
                other => return Err(r.invalid(format!("reply tag {other} (0: result, 1: error)"))),
            };
            ServerMessage::Response(Response { id, reply })
        }
        MessageKind::Subscribed => ServerMessage::Subscribed(Subscribed {
            channel: r.string()?,
            epoch: r.string()?,
            offset: r.uint()?,
            recovered: r.bool()?,
        }),
        MessageKind::Unsubscribed => ServerMessage::Unsubscribed(Unsubscribed {
            channel: r.string()?,
            code: r.string()?,
            reason: r.string()?,
        }),
        MessageKind::SubExpiring => ServerMessage::SubExpiring(SubExpiring {
            channel: r.string()?,
            expires_in_ms: r.uint()?,
        }),
        MessageKind::Publication => ServerMessage::Publication(Publication {
            channel: r.string()?,
            epoch: r.string()?,
            offset: r.uint()?,
            data: r.json()?,
        }),
        MessageKind::Reconnect => {
            let f = r.flags()?;
            ServerMessage::Reconnect(ReconnectAdvice {
                reason: r.string()?,
                min_delay_ms: r.uint()?,
                max_delay_ms: r.uint()?,
                message: r.opt_string(f, 0)?,
            })
        }
        MessageKind::Error => ServerMessage::Error(read_error_body(&mut r)?),
        _ => return Err(r.invalid("a client message, sent to the client".into())),
    };
    Ok(message)
}

fn read_error_body(r: &mut Reader<'_>) -> Result<ErrorBody, DecodeError> {
    let f = r.flags()?;
    Ok(ErrorBody {
        code: r.string()?,
        message: r.string()?,
        retry_after_ms: r.opt_uint(f, 0)?,
    })
}

/// Decode a binary frame the server received.
pub fn decode_client_binary(frame: &[u8]) -> Result<ClientMessage, DecodeError> {
    let (kind, mut r) = open(frame)?;
    let message = match kind {
        MessageKind::Connect => {
            let f = r.flags()?;
            ClientMessage::Connect(Connect {
                protocol: r.uint32()?,
                token: r.opt_string(f, 0)?,
                session: r.opt_string(f, 1)?,
            })
        }
        MessageKind::Ping => ClientMessage::Ping,
        MessageKind::Pong => ClientMessage::Pong,
        MessageKind::Refresh => ClientMessage::Refresh(Refresh { token: r.string()? }),
        MessageKind::Request => {
            let f = r.flags()?;
            let id = r.uint()?;
            let method = r.string()?;
            let params = r.json()?;
            let params = params
                .to_value()
                .map_err(|e| r.invalid(format!("params: {e}")))?;
            ClientMessage::Request(Request {
                id,
                method,
                params,
                idem: r.opt_string(f, 0)?,
                timeout_ms: r.opt_uint(f, 1)?,
            })
        }
        MessageKind::Subscribe => {
            let f = r.flags()?;
            let channel = r.string()?;
            let since = if f.has(0) {
                Some(StreamPosition {
                    epoch: r.string()?,
                    offset: r.uint()?,
                })
            } else {
                None
            };
            ClientMessage::Subscribe(Subscribe {
                channel,
                since,
                token: r.opt_string(f, 1)?,
            })
        }
        MessageKind::Unsubscribe => ClientMessage::Unsubscribe(Unsubscribe {
            channel: r.string()?,
        }),
        MessageKind::SubRefresh => ClientMessage::SubRefresh(SubRefresh {
            channel: r.string()?,
            token: r.string()?,
        }),
        _ => return Err(r.invalid("a server message, sent to the server".into())),
    };
    Ok(message)
}

/// The id of a binary `request` frame that does not decode whole, when its
/// id can be read (the server still answers such a request once, with
/// `bad_request`: spec/PROTOCOL.md §8.2).
pub fn peek_request_id(frame: &[u8]) -> Option<u64> {
    let (MessageKind::Request, mut r) = open(frame).ok()? else {
        return None;
    };
    r.flags().ok()?;
    r.uint().ok()
}

/// The frame's kind and a reader of its body.
fn open(frame: &[u8]) -> Result<(MessageKind, Reader<'_>), DecodeError> {
    if frame.len() > MAX_FRAME_LEN {
        return Err(DecodeError::TooLarge {
            len: frame.len(),
            max: MAX_FRAME_LEN,
        });
    }
    let [hi, lo, body @ ..] = frame else {
        return Err(DecodeError::MissingType);
    };
    let code = u16::from_be_bytes([*hi, *lo]);
    let kind = MessageKind::from_code(code).ok_or_else(|| DecodeError::UnknownType {
        ty: format!("0x{code:04X}"),
    })?;
    Ok((kind, Reader::new(kind, body)))
}

#[cfg(test)]
mod tests;
