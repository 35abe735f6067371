//! Messages sent by the server.

use serde::{Deserialize, Serialize};

use super::{MessageKind, RawJson};

/// A message from server to client. Decoded by
/// [`decode_server`](super::decode_server), which keeps `data` and `result`
/// as text (serde's internally tagged enums would buffer and parse them).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerMessage {
    /// The session is open: the protocol level is up.
    Welcome(Welcome),
    /// Server heartbeat; the client answers `pong`.
    Ping,
    /// Answer to a client `ping`.
    Pong,
    /// The credentials of a `refresh` are in force.
    Refreshed(Refreshed),
    /// The outcome of a request.
    Response(Response),
    /// A subscription is confirmed.
    Subscribed(Subscribed),
    /// A subscription is gone (refused, or lost by the service).
    Unsubscribed(Unsubscribed),
    /// A channel's subscription token expires soon (spec/PROTOCOL.md §5.8).
    SubExpiring(SubExpiring),
    /// A message on a subscribed channel.
    Publication(Publication),
    /// Advice to reconnect after a delay, sent before a planned close.
    Reconnect(ReconnectAdvice),
    /// A client frame could not be processed (not tied to a request).
    Error(ErrorBody),
}

impl ServerMessage {
    /// The message's kind.
    pub fn kind(&self) -> MessageKind {
        match self {
            ServerMessage::Welcome(_) => MessageKind::Welcome,
            ServerMessage::Ping => MessageKind::Ping,
            ServerMessage::Pong => MessageKind::Pong,
            ServerMessage::Refreshed(_) => MessageKind::Refreshed,
            ServerMessage::Response(_) => MessageKind::Response,
            ServerMessage::Subscribed(_) => MessageKind::Subscribed,
            ServerMessage::Unsubscribed(_) => MessageKind::Unsubscribed,
            ServerMessage::SubExpiring(_) => MessageKind::SubExpiring,
            ServerMessage::Publication(_) => MessageKind::Publication,
            ServerMessage::Reconnect(_) => MessageKind::Reconnect,
            ServerMessage::Error(_) => MessageKind::Error,
        }
    }
}

/// `welcome`: session id, heartbeat and pacing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Welcome {
    /// Session id assigned by the server.
    pub session: String,
    /// Protocol version the server speaks.
    pub protocol: u32,
    /// If present, the server pings every this many ms and the client arms a
    /// watchdog of two intervals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_interval_ms: Option<u64>,
    /// If present, the reconnect slot grid this client should use.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::decode::object"
    )]
    pub pacing: Option<Pacing>,
    /// If present, the session's credentials expire this many ms after
    /// `welcome` was sent: the client sends `refresh` before then (or is
    /// closed 4001 `credentials expired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_ms: Option<u64>,
}

/// `refreshed`: the credentials of a `refresh` are in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Refreshed {
    /// If present, the new credentials expire this many ms after this
    /// message was sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in_ms: Option<u64>,
}

/// Reconnect pacing advertised while healthy: reconnect attempts land on the
/// grid `welcome received + phase + k × period`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Pacing {
    /// Grid period in ms.
    pub period_ms: u64,
    /// This client's offset into the period, measured from when the server sent `welcome`.
    pub phase_ms: u64,
    /// If present, how long before this `welcome` the server's plan began:
    /// one reference instant shared by every client of the server, from
    /// which a client finds its own place in the plan and so its beat (the
    /// instants its heartbeat probes at, spread evenly over the fleet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_ms: Option<u64>,
}

/// `response`: exactly one of `result` or `error`. A frame with both or
/// neither is rejected as invalid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawResponse")]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Response {
    /// Id of the request this answers.
    pub id: u64,
    /// The result or the error.
    #[serde(flatten)]
    pub reply: Reply,
}

/// The wire form of `response` before checking that exactly one of `result`
/// and `error` is present (`"result": null` counts as present).
#[derive(Deserialize)]
struct RawResponse {
    id: u64,
    #[serde(default, deserialize_with = "present")]
    result: Option<RawJson>,
    #[serde(default, deserialize_with = "super::decode::object")]
    error: Option<ErrorBody>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<RawJson>, D::Error> {
    RawJson::deserialize(d).map(Some)
}

impl TryFrom<RawResponse> for Response {
    type Error = &'static str;

    fn try_from(raw: RawResponse) -> Result<Self, Self::Error> {
        let reply = match (raw.result, raw.error) {
            (Some(result), None) => Reply::Result(result),
            (None, Some(error)) => Reply::Error(error),
            (Some(_), Some(_)) => return Err("a response has both result and error"),
            (None, None) => return Err("a response needs result or error"),
        };
        Ok(Response { id: raw.id, reply })
    }
}

/// The body of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
// Exactly one of result or error (spec/PROTOCOL.md); belay-server and its tests match both arms.
#[allow(clippy::exhaustive_enums)]
pub enum Reply {
    /// The method succeeded; the result as the server sent it.
    Result(RawJson),
    /// The method failed.
    Error(ErrorBody),
}

/// An error reported by the server. `code` is a short machine-readable
/// string (see spec/PROTOCOL.md for the registered codes).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct ErrorBody {
    /// Machine-readable code, e.g. `unavailable`.
    pub code: String,
    /// Human-readable explanation.
    #[serde(default)]
    pub message: String,
    /// If set, the earliest sensible retry, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
}

impl ErrorBody {
    /// An error with `code` and `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        ErrorBody {
            code: code.into(),
            message: message.into(),
            retry_after_ms: None,
        }
    }
}

/// `subscribed`: the subscription is confirmed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Subscribed {
    /// Channel name.
    pub channel: String,
    /// Current epoch of the channel's history.
    pub epoch: String,
    /// Publications that follow have offsets greater than this. Equal to the
    /// requested position when recovered, else the stream's current top.
    pub offset: u64,
    /// Whether everything after the requested position will be replayed.
    /// `false` after a resume attempt means messages were lost: resync.
    #[serde(default)]
    pub recovered: bool,
}

/// `sub_expiring`: the subscription token of `channel` expires
/// `expires_in_ms` after this message was sent; the client sends
/// `sub_refresh` before then, or the subscription ends with `unsubscribed`
/// `expired`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct SubExpiring {
    /// Channel name.
    pub channel: String,
    /// Time left on the channel's subscription token.
    pub expires_in_ms: u64,
}

/// `unsubscribed`: the subscription is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Unsubscribed {
    /// Channel name.
    pub channel: String,
    /// Why; `forbidden`, `unauthorized`, `not_found` and `bad_request` are
    /// final, every other code means "subscribe again".
    pub code: String,
    /// Human-readable explanation.
    #[serde(default)]
    pub reason: String,
}

impl Unsubscribed {
    /// Whether the client should stop trying to subscribe to this channel.
    pub fn is_final(&self) -> bool {
        matches!(
            self.code.as_str(),
            "forbidden" | "unauthorized" | "not_found" | "bad_request"
        )
    }
}

/// `publication`: one message on a channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Publication {
    /// Channel name.
    pub channel: String,
    /// Epoch of the channel's history.
    pub epoch: String,
    /// Offset within the epoch; consecutive publications differ by one.
    pub offset: u64,
    /// The message, as the server sent it.
    #[serde(default)]
    pub data: RawJson,
}

/// `reconnect`: the server is about to close this connection on purpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct ReconnectAdvice {
    /// Why: `deploy`, `restart`, `overload`, `maintenance`, or another string.
    pub reason: String,
    /// Reconnect no sooner than this many ms after the connection closes.
    pub min_delay_ms: u64,
    /// Reconnect by this many ms after the connection closes (uniformly spread).
    pub max_delay_ms: u64,
    /// A sentence the application may show its user ("Updating the server,
    /// back in a few seconds").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl ReconnectAdvice {
    /// Whether the close is part of a deploy (clients double their backoff).
    pub fn is_deploy(&self) -> bool {
        self.reason == "deploy"
    }
}
