//! Wire messages, their JSON text codec and their compact binary codec.
//!
//! Every frame is one JSON object whose `type` field names the message, as
//! specified in `spec/PROTOCOL.md`. The message types are plain data; the
//! codec ([`encode_client`], [`decode_server`], and their server-side
//! mirrors) is the only place that knows about JSON, and the binary codec
//! ([`encode_client_binary`] and the rest: [`MessageKind::code`] as a
//! two-byte prefix, then the fields in a fixed order, spec/PROTOCOL.md §1.8)
//! carries the same types.
//!
//! Decoding never panics: malformed input becomes a typed [`DecodeError`].
//! Unknown fields are ignored, and an unknown `type` is reported as
//! [`DecodeError::UnknownType`] so a receiver can skip messages from a newer
//! peer instead of treating them as corruption.

mod binary;
mod client;
mod codec;
mod decode;
mod kind;
mod raw_json;
mod request_id;
mod reserved;
mod server;
mod subprotocol;

pub use binary::{
    decode_client_binary, decode_server_binary, encode_client_binary, encode_publication_binary,
    encode_server_binary, peek_request_id,
};
pub use client::{ClientMessage, Connect, Refresh, Request, SubRefresh, Subscribe, Unsubscribe};
pub(crate) use codec::encoded_len_bound;
pub use codec::{
    decode_client, decode_server, encode_client, encode_server, encoded_len, encoded_server_len,
    DecodeError, MAX_FRAME_LEN,
};
pub use kind::MessageKind;
pub use raw_json::RawJson;
pub use request_id::peek_json_request_id;
pub use reserved::{
    AnswerOutcome, AnswerParams, AnswerResult, CallParams, HostCallDelivery, PresenceMember,
    PresenceMembers, PresenceParams, PresenceStats, PublishParams, PublishResult,
};
pub use server::{
    ErrorBody, Pacing, Publication, ReconnectAdvice, Refreshed, Reply, Response, ServerMessage,
    SubExpiring, Subscribed, Unsubscribed, Welcome,
};
pub use subprotocol::Codec;

use serde::{Deserialize, Serialize};

/// The protocol version this crate speaks, sent in `connect` and `welcome`.
pub const PROTOCOL_VERSION: u32 = 1;

/// Application data a client sends (request params), as a JSON value.
/// What a client receives (publication data, request results) is
/// [`RawJson`]: kept as text, never parsed by the core.
pub type Payload = serde_json::Value;

/// A position in a channel's stream: the epoch names one incarnation of the
/// stream's history (it changes when history is lost, e.g. a broker restart),
/// the offset counts publications within it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct StreamPosition {
    /// Incarnation of the channel's history.
    pub epoch: String,
    /// Offset of the last publication delivered (0 = none yet).
    pub offset: u64,
}
