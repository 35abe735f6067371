//! Decoding frames into messages, in either direction.
//!
//! One pass over a well-formed frame: its kind is read from a leading
//! `{"type":"NAME"` (how Belay peers write every frame), and the frame is
//! then decoded as that message's own struct. Anything else (the `type`
//! later in the object, or escaped) first takes a pass that reads only
//! `type`, skipping every other field with serde_json's iterative scanner.
//! A derived internally tagged enum would instead buffer the whole frame
//! into a tree first, parsing every value recursively (serde_json's depth
//! limit of 128, `f64` numbers only): a legal payload, or a deep unknown
//! field, could then poison a connection. A server message's `data` and
//! `result` stay [`RawJson`] text.
//!
//! Every pass checks the whole frame (spec/PROTOCOL.md §1.1, §8.1): it is
//! one JSON object with nothing after it, its `type` key appears once (the
//! struct passes see `type` as an unknown field, so [`CountTypes`] counts it),
//! and every object the protocol nests (`pacing`, `error`, `since`) is a
//! JSON object, not the sequence form serde would also accept. When the
//! message's pass fails, [`failure`] tells a frame that is not JSON (or
//! names `type` twice) from a message whose fields are wrong.
//!
//! [`RawJson`]: super::RawJson

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{BorrowedStrDeserializer, MapAccessDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use super::client::{Connect, Refresh, Request, SubRefresh, Subscribe, Unsubscribe};
use super::codec::DecodeError;
use super::server::{
    ErrorBody, Publication, ReconnectAdvice, Refreshed, Response, SubExpiring, Subscribed,
    Unsubscribed,
};
use super::{ClientMessage, MessageKind, ServerMessage, Welcome};

/// Decode a server message (already checked for size and for being an object).
pub(super) fn server(text: &str) -> Result<ServerMessage, DecodeError> {
    let kind = kind(text)?;
    match kind {
        MessageKind::Welcome => message::<Welcome>(text, kind).map(ServerMessage::Welcome),
        MessageKind::Ping => liveness(text, kind).map(|()| ServerMessage::Ping),
        MessageKind::Pong => liveness(text, kind).map(|()| ServerMessage::Pong),
        MessageKind::Refreshed => message::<Refreshed>(text, kind).map(ServerMessage::Refreshed),
        MessageKind::Response => message::<Response>(text, kind).map(ServerMessage::Response),
        MessageKind::Subscribed => message::<Subscribed>(text, kind).map(ServerMessage::Subscribed),
        MessageKind::Unsubscribed => {
            message::<Unsubscribed>(text, kind).map(ServerMessage::Unsubscribed)
        }
        MessageKind::Publication => {
            message::<Publication>(text, kind).map(ServerMessage::Publication)
        }
        MessageKind::SubExpiring => {
            message::<SubExpiring>(text, kind).map(ServerMessage::SubExpiring)
        }
        MessageKind::Reconnect => {
            message::<ReconnectAdvice>(text, kind).map(ServerMessage::Reconnect)
        }
        MessageKind::Error => message::<ErrorBody>(text, kind).map(ServerMessage::Error),
        _ => wrong_direction(text, kind, "client to server"),
    }
}

/// Decode a client message (already checked for size and for being an object).
pub(super) fn client(text: &str) -> Result<ClientMessage, DecodeError> {
    let kind = kind(text)?;
    match kind {
        MessageKind::Connect => message::<Connect>(text, kind).map(ClientMessage::Connect),
        MessageKind::Ping => liveness(text, kind).map(|()| ClientMessage::Ping),
        MessageKind::Pong => liveness(text, kind).map(|()| ClientMessage::Pong),
        MessageKind::Refresh => message::<Refresh>(text, kind).map(ClientMessage::Refresh),
        MessageKind::Request => message::<Request>(text, kind).map(ClientMessage::Request),
        MessageKind::Subscribe => message::<Subscribe>(text, kind).map(ClientMessage::Subscribe),
        MessageKind::Unsubscribe => {
            message::<Unsubscribe>(text, kind).map(ClientMessage::Unsubscribe)
        }
        MessageKind::SubRefresh => message::<SubRefresh>(text, kind).map(ClientMessage::SubRefresh),
        _ => wrong_direction(text, kind, "server to client"),
    }
}

/// Only the `type` field, borrowed as raw text (a second `type` key is a
/// duplicate field: not JSON, spec/PROTOCOL.md §8.1).
#[derive(Deserialize)]
struct TypeField<'a> {
    #[serde(rename = "type", borrow, default)]
    ty: Option<&'a RawValue>,
}

/// The fast path of the first pass: a frame written the way Belay peers
/// write it, `{"type":"NAME",...`, with a plain name (no escapes). Anything
/// else takes the full first pass. The second pass checks the whole frame
/// either way.
fn leading_type(text: &str) -> Option<&str> {
    let rest = text.strip_prefix(r#"{"type":""#)?;
    let end = rest.find('"')?;
    let name = &rest[..end];
    (!name.contains('\\')).then_some(name)
}

/// The frame's kind. An unknown `type` is reported only once the whole
/// frame is known to be JSON.
fn kind(text: &str) -> Result<MessageKind, DecodeError> {
    let ty = match leading_type(text) {
        Some(ty) => Cow::Borrowed(ty),
        None => {
            let envelope: TypeField<'_> = serde_json::from_str(text).map_err(not_json)?;
            let ty: String = envelope
                .ty
                .and_then(|raw| serde_json::from_str(raw.get()).ok())
                .ok_or(DecodeError::MissingType)?;
            Cow::Owned(ty)
        }
    };
    match MessageKind::from_name(&ty) {
        Some(kind) => Ok(kind),
        None => {
            json_object(text)?;
            Err(DecodeError::UnknownType {
                ty: ty.into_owned(),
            })
        }
    }
}

/// `ping` and `pong` carry nothing; the frame must still be JSON. Exactly
/// `{"type":"ping"}` (the frame every Belay peer sends) needs no pass.
fn liveness(text: &str, kind: MessageKind) -> Result<(), DecodeError> {
    let exact = text
        .strip_prefix(r#"{"type":""#)
        .and_then(|rest| rest.strip_prefix(kind.name()))
        .and_then(|rest| rest.strip_prefix(r#""}"#))
        .is_some_and(|rest| rest.trim_start_matches([' ', '\t', '\n', '\r']).is_empty());
    if exact {
        Ok(())
    } else {
        json_object(text)
    }
}

/// A known type that travels the other way: malformed, not unknown
/// (spec/PROTOCOL.md §1.1), if the frame is JSON at all.
fn wrong_direction<T>(text: &str, kind: MessageKind, way: &str) -> Result<T, DecodeError> {
    json_object(text)?;
    Err(DecodeError::Invalid {
        kind,
        detail: format!("a {kind} message travels {way}"),
    })
}

/// Decode the frame as `T`, the message's own struct.
fn message<'a, T: Deserialize<'a>>(text: &'a str, kind: MessageKind) -> Result<T, DecodeError> {
    whole::<T>(text).map_err(|error| failure(text, kind, error))
}

/// Why the message's pass failed: the frame is not JSON (or names `type`
/// twice), or it is, and the message's fields are wrong.
fn failure(text: &str, kind: MessageKind, error: serde_json::Error) -> DecodeError {
    match json_object(text) {
        Err(not_json) => not_json,
        Ok(()) => DecodeError::Invalid {
            kind,
            detail: error.to_string(),
        },
    }
}

/// The frame is one JSON object with one `type` key (other values skipped
/// by the iterative scanner: no depth limit, numbers not converted).
fn json_object(text: &str) -> Result<(), DecodeError> {
    whole::<IgnoredAny>(text).map(drop).map_err(not_json)
}

fn not_json(error: serde_json::Error) -> DecodeError {
    DecodeError::NotJson {
        detail: error.to_string(),
    }
}

/// `T` from the whole of `text`: one object naming `type` at most once,
/// nothing after it.
fn whole<'a, T: Deserialize<'a>>(text: &'a str) -> Result<T, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Deserializer::deserialize_map(&mut de, ObjectVisitor(PhantomData, OneType))?;
    de.end()?;
    Ok(value)
}

/// A nested protocol object (`pacing`, `error`, `since`): a JSON object,
/// not the sequence form (`[20000, 7350]`) serde would also accept for a
/// struct. For `#[serde(default, deserialize_with = "object")]` on an
/// `Option` field; `null` is `None`.
pub(super) fn object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Nested<T>(T);
    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Nested<T> {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer
                .deserialize_map(ObjectVisitor(PhantomData, AnyKeys))
                .map(Nested)
        }
    }
    Option::<Nested<T>>::deserialize(deserializer).map(|nested| nested.map(|Nested(t)| t))
}

/// How an object's keys are checked.
trait Keys: Copy {
    /// Whether the key `type` is counted (a second one is an error).
    const ONE_TYPE: bool;
}

/// The frame's own object: `type` at most once.
#[derive(Clone, Copy)]
struct OneType;
impl Keys for OneType {
    const ONE_TYPE: bool = true;
}

/// A nested object: any keys.
#[derive(Clone, Copy)]
struct AnyKeys;
impl Keys for AnyKeys {
    const ONE_TYPE: bool = false;
}

/// Accepts only a JSON object and hands it to `T` as a map.
struct ObjectVisitor<T, K>(PhantomData<T>, K);

impl<'de, T: Deserialize<'de>, K: Keys> Visitor<'de> for ObjectVisitor<T, K> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        if K::ONE_TYPE {
            T::deserialize(MapAccessDeserializer::new(CountTypes { map, seen: false }))
        } else {
            T::deserialize(MapAccessDeserializer::new(map))
        }
    }
}

/// A map whose keys are read once to count `type`, then handed on.
struct CountTypes<A> {
    map: A,
    seen: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for CountTypes<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        let Some(Key(key)) = self.map.next_key::<Key<'de>>()? else {
            return Ok(None);
        };
        if key == "type" {
            if self.seen {
                return Err(de::Error::duplicate_field("type"));
            }
            self.seen = true;
        }
        match key {
            Cow::Borrowed(key) => seed.deserialize(BorrowedStrDeserializer::new(key)),
            Cow::Owned(key) => seed.deserialize(StringDeserializer::new(key)),
        }
        .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// An object key, borrowed from the frame unless it has escapes.
pub(super) struct Key<'de>(pub(super) Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(key)))
            }
            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key.to_owned())))
            }
            fn visit_string<E: de::Error>(self, key: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(key)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}
