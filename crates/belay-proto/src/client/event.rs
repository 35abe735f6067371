//! What the session tells the application.

use std::time::Duration;

use serde::Serialize;

use crate::client::readiness::Readiness;
use crate::client::registry::{RequestId, RequestOutcome};
use crate::client::transport::Failure;
use crate::close::CloseInfo;
use crate::heartbeat::LivenessFailure;
use crate::message::{DecodeError, ErrorBody, Publication};

/// Something the application should know about.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// One of the readiness levels changed. Edge-triggered.
    ReadinessChanged {
        /// The new levels.
        readiness: Readiness,
        /// The aggregate.
        ready: bool,
    },
    /// The server accepted the session (`welcome`).
    Connected {
        /// Session id assigned by the server.
        session: String,
    },
    /// A connection that had been established is gone.
    Disconnected {
        /// Why.
        reason: DisconnectReason,
        /// What happens next.
        retry: RetryPlan,
    },
    /// An attempt to connect failed before the session was established.
    ConnectFailed {
        /// Why.
        reason: DisconnectReason,
        /// What happens next.
        retry: RetryPlan,
    },
    /// Automatic reconnection has stopped; `start` or `reconnect_now` resumes it.
    Halted {
        /// Why.
        reason: HaltReason,
    },
    /// `stop()` was called. This is the last event the session emits.
    Stopped,
    /// A request settled.
    Response {
        /// Which request.
        id: RequestId,
        /// How it ended.
        outcome: RequestOutcome,
    },
    /// A subscription was confirmed by the server.
    Subscribed {
        /// Channel name.
        channel: String,
        /// Whether the missed publications will be replayed.
        recovered: bool,
    },
    /// A resumed subscription could not be recovered: messages were lost and
    /// the application must resync this channel from a snapshot.
    RecoveryFailed {
        /// Channel name.
        channel: String,
    },
    /// The service lost the subscription; the session is subscribing again.
    SubscriptionLost {
        /// Channel name.
        channel: String,
        /// The server's code.
        code: String,
    },
    /// The server refused the subscription for good.
    SubscriptionFailed {
        /// Channel name.
        channel: String,
        /// The server's code.
        code: String,
    },
    /// A publication, delivered in offset order without duplicates.
    Publication(Publication),
    /// The server reported an error not tied to a request.
    ServerError(ErrorBody),
    /// A new token is wanted: ask the token provider and hand its answer
    /// to `Session::refresh_token`, or its failure to
    /// `Session::token_failed`. On the open session it comes ahead of the
    /// expiry (the token is sent in-band, no reconnect; without one the
    /// server closes 4001 at the expiry); before a dial (with
    /// `Config::token_provider`) when the token is absent, was refused, or
    /// is near its expiry: the dial follows the answer.
    TokenWanted {
        /// Time left on the current credentials (0 when unknown or expired).
        #[serde(rename = "expires_in_ms", serialize_with = "duration_ms")]
        expires_in: Duration,
    },
    /// The subscription token of `channel` expires in `expires_in` (the
    /// server's `sub_expiring`): hand a new one to
    /// `Session::refresh_subscription_token`, sent in-band without leaving
    /// the channel. Without one the server ends the subscription at the
    /// expiry (`unsubscribed` `expired`) and the channel is subscribed again
    /// with the token it has.
    SubscriptionTokenWanted {
        /// The channel.
        channel: String,
        /// Time left on its subscription token.
        #[serde(rename = "expires_in_ms", serialize_with = "duration_ms")]
        expires_in: Duration,
    },
}

/// Why a connection (or an attempt) ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DisconnectReason {
    /// The transport closed (with the peer's close frame, or without one).
    TransportClosed {
        /// What the driver observed.
        close: CloseInfo,
    },
    /// The transport failed or could not be opened.
    TransportFailed {
        /// What the driver reported.
        failure: Failure,
    },
    /// The peer stopped proving it is alive.
    HeartbeatTimeout {
        /// Which check fired.
        cause: LivenessFailure,
    },
    /// The transport did not open, or the server did not send `welcome`, in time.
    ConnectTimeout,
    /// The peer sent a frame that is not valid protocol.
    ProtocolViolation {
        /// The decode error.
        error: DecodeError,
    },
    /// The device went offline while connecting.
    NetworkOffline,
    /// The application called `stop()`.
    ClientStopped,
    /// The server advised a reconnect (`reconnect`): the session closed
    /// the transport itself once no request was in flight.
    Advised,
    /// The token provider could not give a token before a dial
    /// (`TokenError::Unavailable`, or no answer within the connect
    /// timeout): retried after the backoff.
    TokenUnavailable,
    /// The token provider said the user is not authorized
    /// (`TokenError::Unauthorized`): the session halts.
    Unauthorized,
    /// The driver moved the session to another transport
    /// ([`Session::replace_transport`](crate::Session::replace_transport)):
    /// closed 1000 and dialed again at once.
    Replaced,
}

/// What the session will do after a disconnect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RetryPlan {
    /// It will dial again after this delay.
    After {
        /// The delay.
        #[serde(
            rename = "delay_ms",
            serialize_with = "crate::client::event::duration_ms"
        )]
        delay: Duration,
    },
    /// It will dial again when the device is back online.
    WhenOnline,
    /// It will not retry on its own (see the `Halted` event, or `stop()`).
    No,
}

impl RetryPlan {
    /// Whether the session will reconnect without the application's help.
    pub fn will_retry(&self) -> bool {
        !matches!(self, RetryPlan::No)
    }
}

/// Why automatic reconnection stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum HaltReason {
    /// The server closed the session on purpose (1000, 1008, 4003).
    ServerClosed {
        /// The close the server sent.
        close: CloseInfo,
    },
    /// Credentials were rejected (4001 or HTTP 401/403): refresh them, then `start`.
    AuthFailed,
    /// `max_attempts` automatic reconnects in a row failed.
    Exhausted {
        /// Reconnects attempted.
        attempts: u32,
    },
    /// The server speaks another protocol version.
    ProtocolMismatch {
        /// The version in the server's `welcome`.
        server: u32,
    },
    /// The driver reported a configuration error: retrying cannot help.
    InvalidConfig {
        /// What is wrong.
        detail: String,
    },
}

/// Serialize a duration as whole milliseconds (for the conformance vectors).
pub(crate) fn duration_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
