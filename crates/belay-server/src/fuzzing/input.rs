//! The `connection` target's input model: the frames a fuzzed client
//! session sends, decoded from bytes through `Arbitrary` (and written back
//! by `seed_inputs`).

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{json, Value};

/// Text taken from the input as a little-endian `u16` length followed by
/// that many bytes (fewer if the input ends), invalid UTF-8 replaced. Unlike
/// `String`'s own `Arbitrary` (which takes its length from the end of the
/// input), this can be written back ([`encode_frames`](super::encode_frames)), so seed inputs can
/// be made from the tests' messages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuzzStr(pub String);

impl<'a> Arbitrary<'a> for FuzzStr {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let bytes = FuzzBytes::arbitrary(u)?;
        Ok(FuzzStr(String::from_utf8_lossy(&bytes.0).into_owned()))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (2, None)
    }
}

/// Bytes taken from the input like [`FuzzStr`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuzzBytes(pub Vec<u8>);

impl<'a> Arbitrary<'a> for FuzzBytes {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let len = usize::from(u16::arbitrary(u)?).min(u.len());
        Ok(FuzzBytes(u.bytes(len)?.to_vec()))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (2, None)
    }
}

/// A method to call: one of the `connection` server's methods (`fuzz_methods`), or any other name.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzMethod {
    /// `echo`: answers its params.
    Echo,
    /// `order.create`: idempotent with a key.
    OrderCreate,
    /// `slow`: sleeps `params` ms.
    Slow,
    /// Any other name (normally `not_found`).
    Other(FuzzStr),
}

/// Request params.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzParams {
    /// Absent (`null`).
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// A small number (what `slow` wants).
    Millis(u8),
    /// A string.
    Str(FuzzStr),
    /// An object `{"item": ..., "n": ...}`.
    Object(FuzzStr, u32),
    /// Raw JSON text, used as the params if it parses (else a string).
    Json(FuzzStr),
}

impl FuzzParams {
    pub(super) fn value(&self) -> Value {
        match self {
            FuzzParams::Null => Value::Null,
            FuzzParams::Bool(b) => json!(b),
            FuzzParams::Int(n) => json!(n),
            FuzzParams::Millis(ms) => json!(ms),
            FuzzParams::Str(s) => json!(s.0),
            FuzzParams::Object(item, n) => json!({ "item": item.0, "n": n }),
            FuzzParams::Json(text) => {
                serde_json::from_str(&text.0).unwrap_or_else(|_| json!(text.0))
            }
        }
    }
}

/// A channel name: two the sequence can share, or any other.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzChannel {
    /// `news`.
    News,
    /// `feed`.
    Feed,
    /// Any name.
    Other(FuzzStr),
}

impl FuzzChannel {
    pub(super) fn name(&self) -> &str {
        match self {
            FuzzChannel::News => "news",
            FuzzChannel::Feed => "feed",
            FuzzChannel::Other(name) => &name.0,
        }
    }
}

/// The epoch of a `subscribe`'s `since`.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzEpoch {
    /// The channel's epoch as of the last [`FuzzFrame::Publish`] on it in
    /// this sequence (an empty string before any).
    Current,
    /// Any string.
    Other(FuzzStr),
}

/// An idempotency key: two the sequence can repeat, or any other.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzKey {
    /// `k1`.
    K1,
    /// `k2`.
    K2,
    /// Any key.
    Other(FuzzStr),
}

impl FuzzKey {
    pub(super) fn key(&self) -> String {
        match self {
            FuzzKey::K1 => "k1".into(),
            FuzzKey::K2 => "k2".into(),
            FuzzKey::Other(key) => key.0.clone(),
        }
    }
}

/// One step of a client session, as the `connection` target's input
/// (a `Vec<FuzzFrame>` through `Arbitrary::arbitrary_take_rest`).
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzFrame {
    /// A text frame with exactly this content.
    Text(FuzzStr),
    /// `connect` (protocol 1 is the one the server speaks).
    Connect {
        /// Protocol version.
        protocol: u8,
        /// Credentials.
        token: Option<FuzzStr>,
        /// Previous session id.
        session: Option<FuzzStr>,
    },
    /// `request`.
    Request {
        /// Request id.
        id: u64,
        /// Method.
        method: FuzzMethod,
        /// Params.
        params: FuzzParams,
        /// Idempotency key.
        idem: Option<FuzzKey>,
        /// Client deadline.
        timeout_ms: Option<u16>,
    },
    /// `subscribe`, perhaps resuming.
    Subscribe {
        /// Channel.
        channel: FuzzChannel,
        /// Resume after this position.
        since: Option<(FuzzEpoch, u16)>,
    },
    /// `unsubscribe`.
    Unsubscribe(FuzzChannel),
    /// Protocol-level `ping`.
    Ping,
    /// Protocol-level `pong`.
    Pong,
    /// A text message of about `len` bytes: a `ping` padded with a long
    /// field (frames with 16- and 64-bit lengths, the size limit).
    Padded(u16),
    /// A text message in `pieces` fragments (cut anywhere, even inside a
    /// UTF-8 sequence), with a WebSocket ping after the first if `ping`.
    Fragmented {
        /// The message.
        text: FuzzStr,
        /// Number of fragments (1 + this mod 8).
        pieces: u8,
        /// Interleave a ping.
        ping: bool,
    },
    /// A binary frame.
    Binary(FuzzBytes),
    /// A WebSocket ping (payload cut to 125 bytes).
    WsPing(FuzzBytes),
    /// A WebSocket pong (payload cut to 125 bytes).
    WsPong(FuzzBytes),
    /// A WebSocket close with this code (if any) and reason (cut to fit).
    Close {
        /// Close code.
        code: Option<u16>,
        /// Reason.
        reason: FuzzStr,
    },
    /// These bytes on the wire, as they are (anything at all).
    Raw(FuzzBytes),
    /// The application publishes on a channel (`Server::publish`).
    Publish(FuzzChannel, FuzzParams),
    /// Let the server (and its request tasks) run before the next step.
    Yield,
}
