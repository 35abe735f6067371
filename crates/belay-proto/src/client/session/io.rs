//! What goes into a session and what comes out.

use serde::Serialize;

use crate::client::event::Event;
use crate::client::transport::{Failure, TransportId};
use crate::close::{CloseCode, CloseInfo};
use crate::message::{ClientMessage, Payload, ServerMessage};

/// A fact reported by the driver. Every transport fact names the transport it
/// came from; facts about a transport that is no longer current are dropped.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Input {
    /// The transport the session asked for is open.
    TransportOpened(TransportId),
    /// The transport could not be opened, or failed without a close frame.
    TransportFailed(TransportId, Failure),
    /// The transport closed.
    TransportClosed(TransportId, CloseInfo),
    /// A text frame arrived; the session decodes it as JSON.
    Frame(TransportId, String),
    /// A binary frame arrived (a connection that negotiated the binary
    /// codec, spec/PROTOCOL.md §1.8); the session decodes it as that.
    BinaryFrame(TransportId, Vec<u8>),
    /// An already decoded message arrived (a driver with its own codec, the simulator).
    Message(TransportId, ServerMessage),
    /// The device's network went offline (`false`) or came back (`true`).
    Network {
        /// Whether the device reports a network.
        online: bool,
    },
}

/// Something the driver must do, or tell the application.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "output", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Output {
    /// Dial a new transport with this id. There is never more than one live transport.
    OpenTransport {
        /// The new transport's id.
        id: TransportId,
        /// Backoff delays since the backoff last reset (0 for the first dial
        /// after `start` or after a reset; 1 for the first redial after a loss).
        attempt: u32,
    },
    /// Send a message on a transport.
    Transmit {
        /// Where.
        id: TransportId,
        /// What.
        message: ClientMessage,
    },
    /// Close (or abort) a transport and forget it: the session does not wait
    /// for its close event and ignores anything it reports later.
    CloseTransport {
        /// Which transport.
        id: TransportId,
        /// The close code to send, if the transport is open.
        code: CloseCode,
        /// The close reason to send.
        reason: String,
    },
    /// Tell the application.
    Event(Event),
}

/// A method call the application wants to make.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Call {
    /// Method name.
    pub method: String,
    /// Parameters.
    pub params: Payload,
    /// Deadline for this call; the session's default if `None`.
    pub timeout: Option<std::time::Duration>,
    /// Idempotency key carried on the wire, so that a retry after `Timeout`
    /// or `ConnectionClosed` cannot execute twice.
    pub idempotency_key: Option<String>,
}

impl Call {
    /// A call of `method` with `params`.
    pub fn new(method: impl Into<String>, params: Payload) -> Self {
        Call {
            method: method.into(),
            params,
            timeout: None,
            idempotency_key: None,
        }
    }

    /// Set this call's deadline.
    pub fn with_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Set this call's idempotency key.
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }
}

/// Why a request was refused without being sent. Always safe to retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The protocol level is down: the request was never sent.
    #[error("not ready: the request was not sent")]
    NotReady,
    /// The session was stopped.
    #[error("the session is stopped")]
    Stopped,
    /// The request's frame would exceed the protocol's frame limit: it was
    /// not sent (the server would close the connection for it).
    #[error("the request frame is {len} bytes, over the {max}-byte limit: not sent")]
    TooLarge {
        /// The encoded frame's length in bytes.
        len: usize,
        /// The limit ([`crate::message::MAX_FRAME_LEN`]).
        max: usize,
    },
}

/// Misuse of the subscription commands.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// `subscribe` for a channel already wanted.
    #[error("already subscribed to {0:?}")]
    AlreadySubscribed(String),
    /// `unsubscribe` for a channel not wanted.
    #[error("not subscribed to {0:?}")]
    NotSubscribed(String),
    /// The session was stopped.
    #[error("the session is stopped")]
    Stopped,
}

/// A command after `stop()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
#[error("the session is stopped")]
#[non_exhaustive]
pub struct Stopped;

/// Counters a driver may export as metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionStats {
    /// Transports requested (`OpenTransport` outputs).
    pub transports_opened: u64,
    /// Inputs dropped because they came from a transport that is not current.
    pub stale_inputs: u64,
    /// Frames with an unknown `type`, skipped.
    pub unknown_frames: u64,
    /// Probes (`ping`) sent by the client.
    pub probes_sent: u64,
}
