//! The JSON text codec.

use serde::Serialize;

use super::{ClientMessage, MessageKind, ServerMessage};

/// The largest text frame either side accepts, in bytes (1 MiB).
pub const MAX_FRAME_LEN: usize = 1 << 20;

/// Why a frame could not be decoded. The peer misbehaved; nothing panics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize)]
#[serde(tag = "error", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DecodeError {
    /// The frame is larger than [`MAX_FRAME_LEN`].
    #[error("frame of {len} bytes exceeds the limit of {max}")]
    TooLarge {
        /// Frame length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The frame is not a JSON object.
    #[error("frame is not a JSON object: {detail}")]
    NotJson {
        /// Parser message.
        detail: String,
    },
    /// The object has no string `type` field.
    #[error("frame has no string \"type\" field")]
    MissingType,
    /// The `type` is not one this side knows (perhaps a newer peer): skip it.
    #[error("unknown message type {ty:?}")]
    UnknownType {
        /// The unknown type name.
        ty: String,
    },
    /// The type is known but fields are missing or of the wrong type, or the
    /// message travels in the wrong direction.
    #[error("invalid {kind} message: {detail}")]
    Invalid {
        /// The message kind.
        kind: MessageKind,
        /// What was wrong.
        detail: String,
    },
}

/// Encode a client message as a JSON text frame.
pub fn encode_client(message: &ClientMessage) -> String {
    encode(message)
}

/// The length in bytes of [`encode_client`]'s frame, counted without
/// building it.
pub fn encoded_len(message: &ClientMessage) -> usize {
    counted(message)
}

/// The length in bytes of [`encode_server`]'s frame, counted without
/// building it.
pub fn encoded_server_len(message: &ServerMessage) -> usize {
    counted(message)
}

/// The bytes serde_json writes for `message`, counted, not kept.
fn counted<T: Serialize>(message: &T) -> usize {
    /// Counts what serde_json writes.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing to a counter cannot fail, and messages always serialize.
    let _ = serde_json::to_writer(&mut counter, message);
    counter.0
}

/// An upper bound of the bytes `value` takes in JSON text, found by a walk
/// that formats nothing: every string byte counted as a 6-byte escape, every
/// number as 24 bytes. When it is under a limit, the exact length
/// ([`encoded_len`]) is too, and need not be computed.
pub(crate) fn encoded_len_bound(value: &serde_json::Value) -> usize {
    bound_at(value, 0)
}

/// Deeper than this, the bound gives up (`usize::MAX`: measure exactly).
const BOUND_DEPTH: usize = 32;

fn bound_at(value: &serde_json::Value, depth: usize) -> usize {
    use serde_json::Value;
    let string = |s: &str| s.len().saturating_mul(6).saturating_add(2);
    if depth > BOUND_DEPTH {
        return usize::MAX;
    }
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => string(s),
        Value::Array(items) => items
            .iter()
            .fold(items.len().saturating_add(2), |sum, item| {
                sum.saturating_add(bound_at(item, depth + 1))
            }),
        Value::Object(fields) => fields.iter().fold(2usize, |sum, (key, item)| {
            sum.saturating_add(string(key).saturating_add(2))
                .saturating_add(bound_at(item, depth + 1))
        }),
    }
}

/// Encode a server message as a JSON text frame.
pub fn encode_server(message: &ServerMessage) -> String {
    encode(message)
}

/// Decode a frame the client received.
pub fn decode_server(text: &str) -> Result<ServerMessage, DecodeError> {
    check_frame(text)?;
    super::decode::server(text)
}

/// Decode a frame the server received.
pub fn decode_client(text: &str) -> Result<ClientMessage, DecodeError> {
    check_frame(text)?;
    super::decode::client(text)
}

fn encode<T: Serialize>(message: &T) -> String {
    // Serializing these types cannot fail: every map key is a string and no
    // custom Serialize impl returns an error.
    serde_json::to_string(message).unwrap_or_else(|_| String::from("{}"))
}

/// Within the frame limit, and one JSON object.
fn check_frame(text: &str) -> Result<(), DecodeError> {
    if text.len() > MAX_FRAME_LEN {
        return Err(DecodeError::TooLarge {
            len: text.len(),
            max: MAX_FRAME_LEN,
        });
    }
    // serde would also accept the sequence form of a message (`["ping"]`):
    // a frame is one JSON object, nothing else.
    if !text.trim_start().starts_with('{') {
        return Err(DecodeError::NotJson {
            detail: "expected a JSON object".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::*;
    use serde_json::json;

    #[test]
    fn ping_is_just_its_type() {
        assert_eq!(encode_client(&ClientMessage::Ping), r#"{"type":"ping"}"#);
        assert_eq!(decode_server(r#"{"type":"pong"}"#), Ok(ServerMessage::Pong));
    }

    #[test]
    fn response_carries_exactly_one_of_result_or_error() {
        let ok = decode_server(r#"{"type":"response","id":7,"result":{"n":1}}"#).unwrap();
        assert_eq!(
            ok,
            ServerMessage::Response(Response {
                id: 7,
                reply: Reply::Result(json!({"n": 1}).into())
            })
        );
        let err = decode_server(
            r#"{"type":"response","id":8,"error":{"code":"unavailable","message":"down"}}"#,
        )
        .unwrap();
        assert_eq!(
            err,
            ServerMessage::Response(Response {
                id: 8,
                reply: Reply::Error(ErrorBody::new("unavailable", "down"))
            })
        );
        assert_eq!(
            decode_server(r#"{"type":"response","id":10,"result":null}"#),
            Ok(ServerMessage::Response(Response {
                id: 10,
                reply: Reply::Result(RawJson::null())
            }))
        );
        assert!(matches!(
            decode_server(r#"{"type":"response","id":11,"result":1,"error":{"code":"x"}}"#),
            Err(DecodeError::Invalid {
                kind: MessageKind::Response,
                ..
            })
        ));
        assert!(matches!(
            decode_server(r#"{"type":"response","id":9}"#),
            Err(DecodeError::Invalid {
                kind: MessageKind::Response,
                ..
            })
        ));
    }

    #[test]
    fn malformed_frames_yield_typed_errors() {
        assert!(matches!(
            decode_server("not json"),
            Err(DecodeError::NotJson { .. })
        ));
        assert!(matches!(
            decode_server("[1,2]"),
            Err(DecodeError::NotJson { .. })
        ));
        assert_eq!(decode_server(r#"{"id":1}"#), Err(DecodeError::MissingType));
        assert_eq!(
            decode_server(r#"{"type":5}"#),
            Err(DecodeError::MissingType)
        );
        assert_eq!(
            decode_server(r#"{"type":"hologram"}"#),
            Err(DecodeError::UnknownType {
                ty: "hologram".into()
            })
        );
        assert!(matches!(
            decode_server(r#"{"type":"welcome","session":1}"#),
            Err(DecodeError::Invalid {
                kind: MessageKind::Welcome,
                ..
            })
        ));
    }

    #[test]
    fn the_sequence_form_of_a_message_is_not_a_frame() {
        for text in [
            r#"["ping"]"#,
            r#"["welcome","s-1",1,null,null]"#,
            "[1]",
            " 7",
        ] {
            assert!(
                matches!(decode_server(text), Err(DecodeError::NotJson { .. })),
                "{text}"
            );
        }
        assert!(matches!(
            decode_client(r#"["subscribe","news",null]"#),
            Err(DecodeError::NotJson { .. })
        ));
    }

    #[test]
    fn a_message_in_the_wrong_direction_is_invalid_not_unknown() {
        assert!(matches!(
            decode_server(r#"{"type":"subscribe","channel":"a"}"#),
            Err(DecodeError::Invalid {
                kind: MessageKind::Subscribe,
                ..
            })
        ));
    }

    #[test]
    fn oversized_frames_are_rejected_before_parsing() {
        let big = "x".repeat(MAX_FRAME_LEN + 1);
        assert_eq!(
            decode_client(&big),
            Err(DecodeError::TooLarge {
                len: MAX_FRAME_LEN + 1,
                max: MAX_FRAME_LEN
            })
        );
    }

    #[test]
    fn unknown_fields_are_ignored_for_forward_compatibility() {
        let msg = decode_server(r#"{"type":"ping","future":true}"#).unwrap();
        assert_eq!(msg, ServerMessage::Ping);
    }
}
