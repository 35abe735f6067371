//! Message kinds and their stable two-byte codes.

use std::fmt;

/// Every message type of the protocol, with a stable 16-bit code.
///
/// The codes lead every frame of the compact binary codec
/// ([`encode_client_binary`](super::encode_client_binary)): a two-byte prefix
/// lets a router slice frames by type without parsing the body, and a new
/// version of a message gets a new code rather than a changed shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageKind {
    /// Client → server: open the session.
    Connect,
    /// Server → client: the session is open.
    Welcome,
    /// Either direction: liveness probe.
    Ping,
    /// Either direction: answer to a probe.
    Pong,
    /// Client → server: new credentials for the open session.
    Refresh,
    /// Server → client: the new credentials are in force.
    Refreshed,
    /// Client → server: call a method.
    Request,
    /// Server → client: the outcome of a request.
    Response,
    /// Client → server: join a channel.
    Subscribe,
    /// Server → client: the subscription is confirmed.
    Subscribed,
    /// Client → server: leave a channel.
    Unsubscribe,
    /// Server → client: the subscription is gone.
    Unsubscribed,
    /// Server → client: a message on a channel.
    Publication,
    /// Client → server: a new subscription token for a subscribed channel.
    SubRefresh,
    /// Server → client: a channel's subscription token expires soon.
    SubExpiring,
    /// Server → client: reconnect advice before a planned close.
    Reconnect,
    /// Server → client: a frame could not be processed.
    Error,
}

impl MessageKind {
    /// Every kind, in code order.
    pub const ALL: [MessageKind; 17] = [
        MessageKind::Connect,
        MessageKind::Welcome,
        MessageKind::Ping,
        MessageKind::Pong,
        MessageKind::Refresh,
        MessageKind::Refreshed,
        MessageKind::Request,
        MessageKind::Response,
        MessageKind::Subscribe,
        MessageKind::Subscribed,
        MessageKind::Unsubscribe,
        MessageKind::Unsubscribed,
        MessageKind::Publication,
        MessageKind::SubRefresh,
        MessageKind::SubExpiring,
        MessageKind::Reconnect,
        MessageKind::Error,
    ];

    /// The `type` field on the wire.
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::Connect => "connect",
            MessageKind::Welcome => "welcome",
            MessageKind::Ping => "ping",
            MessageKind::Pong => "pong",
            MessageKind::Refresh => "refresh",
            MessageKind::Refreshed => "refreshed",
            MessageKind::Request => "request",
            MessageKind::Response => "response",
            MessageKind::Subscribe => "subscribe",
            MessageKind::Subscribed => "subscribed",
            MessageKind::Unsubscribe => "unsubscribe",
            MessageKind::Unsubscribed => "unsubscribed",
            MessageKind::Publication => "publication",
            MessageKind::SubRefresh => "sub_refresh",
            MessageKind::SubExpiring => "sub_expiring",
            MessageKind::Reconnect => "reconnect",
            MessageKind::Error => "error",
        }
    }

    /// The stable two-byte code: the first two bytes (big-endian) of every
    /// frame of the binary codec (spec/PROTOCOL.md §1.8).
    pub fn code(self) -> u16 {
        match self {
            MessageKind::Connect => 0x0001,
            MessageKind::Welcome => 0x0002,
            MessageKind::Ping => 0x0003,
            MessageKind::Pong => 0x0004,
            MessageKind::Refresh => 0x0005,
            MessageKind::Refreshed => 0x0006,
            MessageKind::Request => 0x0010,
            MessageKind::Response => 0x0011,
            MessageKind::Subscribe => 0x0020,
            MessageKind::Subscribed => 0x0021,
            MessageKind::Unsubscribe => 0x0022,
            MessageKind::Unsubscribed => 0x0023,
            MessageKind::Publication => 0x0024,
            MessageKind::SubRefresh => 0x0025,
            MessageKind::SubExpiring => 0x0026,
            MessageKind::Reconnect => 0x0030,
            MessageKind::Error => 0x00FF,
        }
    }

    /// The kind with the two-byte code `code`, if any.
    pub fn from_code(code: u16) -> Option<MessageKind> {
        MessageKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The kind with wire name `name`, if any.
    pub fn from_name(name: &str) -> Option<MessageKind> {
        MessageKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl serde::Serialize for MessageKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for MessageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
