//! Messages sent by the client.

use serde::{Deserialize, Serialize};

use super::{MessageKind, Payload, StreamPosition};

/// A message from client to server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ClientMessage {
    /// First frame on every transport: opens the session.
    Connect(Connect),
    /// Liveness probe; the server answers `pong`.
    Ping,
    /// Answer to a server `ping`.
    Pong,
    /// New credentials for the open session, before the current ones
    /// expire.
    Refresh(Refresh),
    /// Call a method.
    Request(Request),
    /// Join a channel, optionally resuming from a position.
    Subscribe(Subscribe),
    /// Leave a channel.
    Unsubscribe(Unsubscribe),
    /// A new subscription token for a subscribed channel, before the
    /// current one expires (spec/PROTOCOL.md §5.8).
    SubRefresh(SubRefresh),
}

impl ClientMessage {
    /// The message's kind.
    pub fn kind(&self) -> MessageKind {
        match self {
            ClientMessage::Connect(_) => MessageKind::Connect,
            ClientMessage::Ping => MessageKind::Ping,
            ClientMessage::Pong => MessageKind::Pong,
            ClientMessage::Refresh(_) => MessageKind::Refresh,
            ClientMessage::Request(_) => MessageKind::Request,
            ClientMessage::Subscribe(_) => MessageKind::Subscribe,
            ClientMessage::Unsubscribe(_) => MessageKind::Unsubscribe,
            ClientMessage::SubRefresh(_) => MessageKind::SubRefresh,
        }
    }
}

/// `connect`: protocol version and optional credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Connect {
    /// Protocol version the client speaks.
    pub protocol: u32,
    /// Credentials, checked by the server's auth hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Id of the previous session, so the server can correlate reconnects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
}

/// `refresh`: new credentials for the open session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Refresh {
    /// The new credentials, for the same user.
    pub token: String,
}

/// `sub_refresh`: a new subscription token for a subscribed channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct SubRefresh {
    /// The subscribed channel.
    pub channel: String,
    /// The new subscription token, for the same channel and user.
    pub token: String,
}

/// `request`: a method call that always settles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Request {
    /// Monotonic id, never reused within a client session, even across reconnects.
    pub id: u64,
    /// Method name.
    pub method: String,
    /// Parameters (any JSON value; `null` when absent).
    #[serde(default)]
    pub params: Payload,
    /// Idempotency key: a retried request with the same key returns the first result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idem: Option<String>,
    /// How long the client will wait, so the server can drop work nobody awaits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// `subscribe`: join a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Subscribe {
    /// Channel name.
    pub channel: String,
    /// Resume after this position; absent on a first subscribe.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::decode::object"
    )]
    pub since: Option<StreamPosition>,
    /// A subscription token for the channel (spec/PROTOCOL.md §5.2), where
    /// the server asks for one; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// `unsubscribe`: leave a channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// Wire data fixed by spec/PROTOCOL.md: the server, drivers and tests build it with a literal.
#[allow(clippy::exhaustive_structs)]
pub struct Unsubscribe {
    /// Channel name.
    pub channel: String,
}
