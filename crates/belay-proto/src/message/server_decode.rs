//! Decoding server messages without parsing application data.
//!
//! Two passes over the frame: the first reads only `type` (every other
//! field is skipped by serde_json's iterative scanner), the second decodes
//! the message's own struct, whose `data` / `result` is [`RawJson`] text.
//! A derived internally tagged enum would instead buffer the whole frame
//! into a tree first, parsing the payload recursively (serde_json's depth
//! limit of 128, `f64` numbers only): a legal payload could then poison a
//! channel.
//!
//! [`RawJson`]: super::RawJson

use serde::Deserialize;
use serde_json::value::RawValue;

use super::codec::DecodeError;
use super::server::{ErrorBody, Publication, ReconnectAdvice, Response, Subscribed, Unsubscribed};
use super::{MessageKind, ServerMessage, Welcome};

/// Only the `type` field, borrowed as raw text.
#[derive(Deserialize)]
struct TypeField<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<&'a RawValue>,
}

/// The fast path of the first pass: a frame written the way Belay servers
/// write it, `{"type":"NAME",...`, with a plain name (no escapes). Anything
/// else takes the full first pass. The second pass checks the whole frame
/// either way.
fn leading_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix(r#"{"type":""#)?;
    let end = rest.find('"')?;
    let name = &rest[..end];
    (!name.contains('\\')).then_some(name)
}

/// Decode one frame (already checked for size and for being an object).
pub(super) fn decode(text: &str) -> Result<ServerMessage, DecodeError> {
    let kind = match leading_type(text) {
        Some(ty) => MessageKind::from_name(ty)
            .ok_or_else(|| DecodeError::UnknownType { ty: ty.to_owned() })?,
        None => {
            let envelope: TypeField<'_> =
                serde_json::from_str(text).map_err(|e| DecodeError::NotJson {
                    detail: e.to_string(),
                })?;
            let ty: String = envelope
                .ty
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .ok_or(DecodeError::MissingType)?;
            MessageKind::from_name(&ty).ok_or(DecodeError::UnknownType { ty })?
        }
    };
    let invalid = |detail: String| DecodeError::Invalid { kind, detail };
    fn body<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
    match kind {
        MessageKind::Welcome => body::<Welcome>(text).map(ServerMessage::Welcome),
        MessageKind::Ping => Ok(ServerMessage::Ping),
        MessageKind::Pong => Ok(ServerMessage::Pong),
        MessageKind::Response => body::<Response>(text).map(ServerMessage::Response),
        MessageKind::Subscribed => body::<Subscribed>(text).map(ServerMessage::Subscribed),
        MessageKind::Unsubscribed => body::<Unsubscribed>(text).map(ServerMessage::Unsubscribed),
        MessageKind::Publication => body::<Publication>(text).map(ServerMessage::Publication),
        MessageKind::Reconnect => body::<ReconnectAdvice>(text).map(ServerMessage::Reconnect),
        MessageKind::Error => body::<ErrorBody>(text).map(ServerMessage::Error),
        _ => Err(format!(
            "a {} message travels client to server",
            kind.name()
        )),
    }
    .map_err(invalid)
}
