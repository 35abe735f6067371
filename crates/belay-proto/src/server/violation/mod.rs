//! [`Violation`]: what a client did wrong, and what the server answers.

use std::time::Duration;

use super::ChannelNameError;
use crate::backoff::MAX_HINT_DELAY;
use crate::close::CloseCode;
use crate::message::{ErrorBody, ReconnectAdvice};

/// Integers on the wire stay at or below 2^53 − 1 (spec/PROTOCOL.md §1.1).
const MAX_WIRE_INT: u64 = (1 << 53) - 1;

/// Something a client did that the server must answer in a documented way.
///
/// [`Violation::response`] is the one place that says what the server
/// answers (spec/PROTOCOL.md §2.7, §8.2):
///
/// | violation | response |
/// |---|---|
/// | [`BadOrigin`](Violation::BadOrigin) | HTTP 403 before the upgrade |
/// | [`TooManyConnectionsFromIp`](Violation::TooManyConnectionsFromIp) | HTTP 429 with `Retry-After` before the upgrade |
/// | [`TooManyPendingUpgrades`](Violation::TooManyPendingUpgrades) | HTTP 503 with `Retry-After: 1` at once, the socket closed |
/// | [`HandshakeTimeout`](Violation::HandshakeTimeout) | close 4008 `handshake timeout` |
/// | [`NotConnectFirst`](Violation::NotConnectFirst) | close 1002 `connect expected` |
/// | [`DuplicateConnect`](Violation::DuplicateConnect) | close 1002 `duplicate connect` |
/// | [`UnsupportedProtocol`](Violation::UnsupportedProtocol) | close 1008 `unsupported protocol version` (terminal for the client) |
/// | [`FrameTooLarge`](Violation::FrameTooLarge) | close 1009 `frame too large` |
/// | [`InvalidUtf8`](Violation::InvalidUtf8) | close 1007 `invalid utf-8` |
/// | [`MalformedFrame`](Violation::MalformedFrame), [`UnknownType`](Violation::UnknownType), [`BinaryFrame`](Violation::BinaryFrame), [`TextFrame`](Violation::TextFrame) | reply `bad_request`, keep the connection |
/// | [`RateLimited`](Violation::RateLimited) | reply `rate_limited` with `retry_after_ms`, keep the connection |
/// | [`Flood`](Violation::Flood) | `reconnect` advice (`rate_limited`), then close 4029 `rate limited` |
/// | [`SlowConsumer`](Violation::SlowConsumer) | close 4009 `slow consumer` |
/// | [`TooManySubscriptions`](Violation::TooManySubscriptions) | `unsubscribed` `forbidden` (final), keep the connection |
/// | [`TooManyChannels`](Violation::TooManyChannels) | `unsubscribed` `unavailable` (the client retries with backoff), keep the connection |
/// | [`InvalidChannel`](Violation::InvalidChannel) | `unsubscribed` `bad_request` (final), keep the connection |
/// | [`TooManyInFlight`](Violation::TooManyInFlight) | reply `rate_limited` `too many requests in flight`, keep the connection |
/// | [`IdempotencyConflict`](Violation::IdempotencyConflict) | reply `bad_request` `idempotency key reused with other params`, keep the connection |
/// | [`LivenessFlood`](Violation::LivenessFlood) | `reconnect` advice (`rate_limited`), then close 4029 `ping flood` |
///
/// A reply goes out as a `response` with the request's `id` when the frame
/// was a `request` whose id could be read (every request gets exactly one
/// response), and as an `error` message otherwise. Before the session is
/// established, any frame that is not a valid `connect`, malformed or not,
/// is [`NotConnectFirst`](Violation::NotConnectFirst).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Violation {
    /// The upgrade request's `Origin` is not allowed.
    BadOrigin,
    /// The client's IP already holds the maximum number of connections.
    TooManyConnectionsFromIp {
        /// A hint for the HTTP `Retry-After` header.
        retry_after: Duration,
    },
    /// Too many TCP connections not yet upgraded (in all, or from this
    /// source): the new one is answered at once and closed.
    TooManyPendingUpgrades,
    /// No `connect` within the handshake timeout.
    HandshakeTimeout,
    /// The first frame was not a valid `connect`.
    NotConnectFirst,
    /// A second `connect` on an established session.
    DuplicateConnect,
    /// `connect.protocol` names a version the server cannot speak.
    UnsupportedProtocol,
    /// A frame longer than the server's limit.
    FrameTooLarge,
    /// A text frame that is not valid UTF-8.
    InvalidUtf8,
    /// Not one JSON object with a string `type`, or a known type with invalid
    /// fields, or a type that travels the other way.
    MalformedFrame,
    /// A `type` the server does not know.
    UnknownType,
    /// A binary frame on a JSON connection.
    BinaryFrame,
    /// A text frame on a binary connection.
    TextFrame,
    /// A frame over the connection's message rate.
    RateLimited {
        /// Until the next frame is allowed.
        retry_after: Duration,
    },
    /// A sustained flood (see [`RateLimiter`](super::RateLimiter)).
    Flood {
        /// How long the client should stay away.
        retry_after: Duration,
    },
    /// The connection's outbound queue is full: the client reads too slowly.
    SlowConsumer,
    /// A `subscribe` for one channel more than the connection may hold
    /// ([`Limits::max_subscriptions`](super::Limits::max_subscriptions)).
    TooManySubscriptions,
    /// A `subscribe` that would create a channel while the broker already
    /// holds as many as it may (belay-server: `HistoryLimits::max_channels`).
    TooManyChannels,
    /// A `subscribe` for an empty channel name or one longer than
    /// [`Limits::max_channel_len`](super::Limits::max_channel_len).
    InvalidChannel(ChannelNameError),
    /// A `request` while the connection already has
    /// [`Limits::max_in_flight`](super::Limits::max_in_flight) running.
    TooManyInFlight,
    /// A keyed `request` whose key was used before with other params (keys
    /// are scoped to user and method; see
    /// [`IdempotencyCache`](super::IdempotencyCache)).
    IdempotencyConflict,
    /// Liveness frames (pings, pongs) far beyond their own budget
    /// ([`Limits::liveness_per_sec`](super::Limits::liveness_per_sec)).
    LivenessFlood {
        /// How long the client should stay away.
        retry_after: Duration,
    },
}

/// What the server does about a [`Violation`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationResponse {
    /// Refuse the WebSocket upgrade with this HTTP status.
    RejectUpgrade {
        /// HTTP status code.
        status: u16,
        /// Value of the `Retry-After` header, in whole seconds (rounded up).
        retry_after_secs: Option<u64>,
    },
    /// Answer with this error and keep the connection: as the `error` of a
    /// `response` if the frame was a request with a readable id, else as an
    /// `error` message. The driver may replace `message` with the decoder's
    /// detail.
    Reply(ErrorBody),
    /// Send `advice` (if any) as a `reconnect` message, then close.
    Close {
        /// Close code.
        code: CloseCode,
        /// Close reason text.
        reason: &'static str,
        /// `reconnect` advice to send just before closing.
        advice: Option<ReconnectAdvice>,
    },
}

impl ViolationResponse {
    /// The close code, if the response closes the connection.
    pub fn close_code(&self) -> Option<CloseCode> {
        match self {
            ViolationResponse::Close { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Whether the connection stays open.
    pub fn keeps_connection(&self) -> bool {
        matches!(self, ViolationResponse::Reply(_))
    }
}

impl Violation {
    /// The documented response: the single source of truth for the table in
    /// the [`Violation`] docs.
    pub fn response(&self) -> ViolationResponse {
        use ViolationResponse::{Close, RejectUpgrade, Reply};
        let close = |code, reason| Close {
            code,
            reason,
            advice: None,
        };
        match *self {
            Violation::BadOrigin => RejectUpgrade {
                status: 403,
                retry_after_secs: None,
            },
            Violation::TooManyConnectionsFromIp { retry_after } => RejectUpgrade {
                status: 429,
                retry_after_secs: Some(ceil_secs(retry_after)),
            },
            Violation::TooManyPendingUpgrades => RejectUpgrade {
                status: 503,
                retry_after_secs: Some(1),
            },
            Violation::HandshakeTimeout => close(CloseCode::HANDSHAKE_TIMEOUT, "handshake timeout"),
            Violation::NotConnectFirst => close(CloseCode::PROTOCOL_ERROR, "connect expected"),
            Violation::DuplicateConnect => close(CloseCode::PROTOCOL_ERROR, "duplicate connect"),
            Violation::UnsupportedProtocol => {
                close(CloseCode::POLICY_VIOLATION, "unsupported protocol version")
            }
            Violation::FrameTooLarge => close(CloseCode::TOO_BIG, "frame too large"),
            Violation::InvalidUtf8 => close(CloseCode::INVALID_DATA, "invalid utf-8"),
            Violation::MalformedFrame => Reply(ErrorBody::new("bad_request", "malformed frame")),
            Violation::UnknownType => Reply(ErrorBody::new("bad_request", "unknown message type")),
            Violation::BinaryFrame => Reply(ErrorBody::new(
                "bad_request",
                "binary frames are not supported",
            )),
            Violation::TextFrame => Reply(ErrorBody::new(
                "bad_request",
                "text frames are not supported on a binary connection",
            )),
            Violation::RateLimited { retry_after } => Reply(ErrorBody {
                code: "rate_limited".to_owned(),
                message: "too many messages".to_owned(),
                retry_after_ms: Some(ceil_ms(retry_after).min(MAX_WIRE_INT)),
            }),
            Violation::Flood { retry_after } => flood_close("rate limited", retry_after),
            Violation::LivenessFlood { retry_after } => flood_close("ping flood", retry_after),
            Violation::SlowConsumer => close(CloseCode::SLOW_CONSUMER, "slow consumer"),
            Violation::TooManySubscriptions => Reply(ErrorBody::new(
                "forbidden",
                "too many subscriptions on this connection",
            )),
            Violation::TooManyChannels => Reply(ErrorBody::new(
                "unavailable",
                "too many channels on the server",
            )),
            Violation::InvalidChannel(ChannelNameError::Empty) => {
                Reply(ErrorBody::new("bad_request", "empty channel name"))
            }
            Violation::InvalidChannel(ChannelNameError::TooLong { .. }) => {
                Reply(ErrorBody::new("bad_request", "channel name too long"))
            }
            Violation::TooManyInFlight => Reply(ErrorBody::new(
                "rate_limited",
                "too many requests in flight",
            )),
            Violation::IdempotencyConflict => Reply(ErrorBody::new(
                "bad_request",
                "idempotency key reused with other params",
            )),
        }
    }

    /// The error a refused `request` gets as its one `response`: the
    /// documented reply (a violation that closes instead has none, and
    /// answers `bad_request` with its name).
    pub fn refusal(&self) -> crate::message::Reply {
        match self.response() {
            ViolationResponse::Reply(error) => crate::message::Reply::Error(error),
            _ => crate::message::Reply::Error(ErrorBody::new("bad_request", self.name())),
        }
    }

    /// A stable `snake_case` name, e.g. for a metrics label.
    pub fn name(&self) -> &'static str {
        match self {
            Violation::BadOrigin => "bad_origin",
            Violation::TooManyConnectionsFromIp { .. } => "too_many_connections_from_ip",
            Violation::TooManyPendingUpgrades => "too_many_pending_upgrades",
            Violation::HandshakeTimeout => "handshake_timeout",
            Violation::NotConnectFirst => "not_connect_first",
            Violation::DuplicateConnect => "duplicate_connect",
            Violation::UnsupportedProtocol => "unsupported_protocol",
            Violation::FrameTooLarge => "frame_too_large",
            Violation::InvalidUtf8 => "invalid_utf8",
            Violation::MalformedFrame => "malformed_frame",
            Violation::UnknownType => "unknown_type",
            Violation::BinaryFrame => "binary_frame",
            Violation::TextFrame => "text_frame",
            Violation::RateLimited { .. } => "rate_limited",
            Violation::Flood { .. } => "flood",
            Violation::SlowConsumer => "slow_consumer",
            Violation::TooManySubscriptions => "too_many_subscriptions",
            Violation::TooManyChannels => "too_many_channels",
            Violation::InvalidChannel(_) => "invalid_channel",
            Violation::TooManyInFlight => "too_many_in_flight",
            Violation::IdempotencyConflict => "idempotency_conflict",
            Violation::LivenessFlood { .. } => "liveness_flood",
        }
    }
}

/// `reconnect` advice to stay away at least until the whole burst is back,
/// spread over as long again (clients clamp both to `MAX_HINT_DELAY`), then
/// close 4029.
fn flood_close(reason: &'static str, retry_after: Duration) -> ViolationResponse {
    let limit = ceil_ms(MAX_HINT_DELAY);
    let min = ceil_ms(retry_after).min(limit);
    ViolationResponse::Close {
        code: CloseCode::RATE_LIMITED,
        reason,
        advice: Some(ReconnectAdvice {
            reason: "rate_limited".to_owned(),
            min_delay_ms: min,
            max_delay_ms: min.saturating_mul(2).min(limit),
            message: None,
        }),
    }
}

/// Whole milliseconds, rounded up.
fn ceil_ms(duration: Duration) -> u64 {
    let micros = duration.as_micros();
    u64::try_from(micros.div_ceil(1_000)).unwrap_or(u64::MAX)
}

/// Whole seconds, rounded up, at least 1 (a `Retry-After: 0` invites an
/// immediate retry).
pub(super) fn ceil_secs(duration: Duration) -> u64 {
    let nanos = duration.as_nanos();
    u64::try_from(nanos.div_ceil(1_000_000_000))
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests;
