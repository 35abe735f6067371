//! What goes into and comes out of a server [`Connection`](super::Connection):
//! frames and transport failures in, answers to what it asked, and the
//! outputs the driver carries out.

use std::fmt;

use crate::close::CloseCode;
use crate::message::{ErrorBody, Pacing, Request, ServerMessage, StreamPosition, Subscribed};
use crate::time::Instant;

use super::super::Violation;

/// One frame from the peer, as the WebSocket layer (or another transport)
/// delivered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Frame<'a> {
    /// A text frame (valid UTF-8, within the frame limit): a message on a
    /// JSON connection, a violation on a binary one.
    Text(&'a str),
    /// A binary frame (within the frame limit): a message on a binary
    /// connection, a violation on a JSON one.
    Binary(&'a [u8]),
    /// A WebSocket ping control frame, with its payload (at most 125 bytes).
    Ping(&'a [u8]),
    /// A WebSocket pong control frame.
    Pong,
    /// The peer's close frame, with its code if it sent one.
    Close(Option<u16>),
}

/// Why the transport could not deliver the next frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportError {
    /// A frame longer than the limit (the transport must not buffer it).
    TooLarge,
    /// A text frame that is not UTF-8.
    InvalidUtf8,
    /// Any other breach of the transport's framing (RFC 6455 §5).
    Protocol,
    /// The peer vanished: end of stream or an I/O error.
    Gone,
}

/// Names one question the connection asked its driver; the answer carries
/// it back. Answers to tickets the connection no longer waits for (the
/// subscribe was replaced, the connection closed) are ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub(crate) u64);

impl Ticket {
    /// The ticket's number (unique within one connection).
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// The authenticator's verdict on a `connect`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthVerdict {
    /// The credential is good.
    Accepted {
        /// When it stops being good (on the connection's clock), if ever.
        expires_at: Option<Instant>,
        /// The reconnect slot to advertise in `welcome`, if the server paces
        /// reconnects.
        pacing: Option<Pacing>,
    },
    /// The credential is missing or bad: close 4001 `unauthorized`.
    Refused,
    /// The credential is missing or bad, for a reason the developer can
    /// act on (`token expired`, `bad signature`): close 4001
    /// `unauthorized: REASON` (cut to fit a close frame). The reason must
    /// not contain secrets.
    RefusedFor {
        /// Why.
        reason: String,
    },
    /// Nobody could judge the credential now (the backend that decides is
    /// unreachable, too slow or failing): close 1013 `unavailable: REASON`,
    /// which clients retry with backoff, as they do after an overload.
    /// Not an auth failure: the credential may be good.
    Unavailable {
        /// Why (no secrets).
        reason: String,
    },
}

impl AuthVerdict {
    /// A credential that never expires, without pacing.
    pub fn accepted() -> Self {
        AuthVerdict::Accepted {
            expires_at: None,
            pacing: None,
        }
    }
}

/// What the broker answered to a [`Output::Join`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum JoinAnswer<F> {
    /// Joined: the confirmation to send, then the replay (in offset order),
    /// then live publications from `subscribed.offset` (or the replay's last
    /// offset) on.
    Joined {
        /// The confirmation, as the broker's recovery decided it.
        subscribed: Subscribed,
        /// The broker's id of this subscription; live items carry it.
        subscription: u64,
        /// Missed publications: (offset, encoded frame).
        replay: Vec<(u64, F)>,
    },
    /// The broker cannot hold one more channel.
    NoRoom,
    /// The broker refused for another reason (it is down): `unsubscribed`
    /// with this error; the client retries with backoff.
    Unavailable(ErrorBody),
}

/// Something the driver must do, in order.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Output<F> {
    /// Send this message.
    Send(ServerMessage),
    /// Send this already-encoded frame (a publication the broker encoded
    /// once for every subscriber).
    SendEncoded(F),
    /// Answer a WebSocket ping with a pong carrying this payload.
    Pong(Vec<u8>),
    /// Authenticate this credential (the `connect`'s token, or else the one
    /// the upgrade carried), then call
    /// [`Input::Auth`](super::Input::Auth).
    Authenticate {
        /// The question.
        ticket: Ticket,
        /// The credential, if the client sent one.
        token: Option<String>,
    },
    /// Check the credential of a `refresh`: it must be good and name the
    /// connection's principal (the same user). Answer with
    /// [`Input::Refresh`](super::Input::Refresh).
    Reauthenticate {
        /// The question.
        ticket: Ticket,
        /// The new credential.
        token: String,
    },
    /// May this connection's principal subscribe to `channel`? Answer with
    /// [`Input::SubscribeAuthorized`](super::Input::SubscribeAuthorized).
    AuthorizeSubscribe {
        /// The question.
        ticket: Ticket,
        /// The channel.
        channel: String,
        /// The subscription token the client sent with it, if any.
        token: Option<String>,
    },
    /// Check the subscription token of a `sub_refresh` for `channel`, held
    /// (spec/PROTOCOL.md §5.8), as a subscribe's: good for this principal
    /// and channel, and for how long. Answer with
    /// [`Input::SubRefreshChecked`](super::Input::SubRefreshChecked).
    CheckSubscriptionToken {
        /// The question.
        ticket: Ticket,
        /// The channel.
        channel: String,
        /// The new subscription token.
        token: String,
    },
    /// Subscribe to `channel` in the broker, resuming after `since`; answer
    /// with [`Input::Joined`](super::Input::Joined).
    Join {
        /// The question.
        ticket: Ticket,
        /// The channel.
        channel: String,
        /// The client's position, if it resumes.
        since: Option<StreamPosition>,
    },
    /// Leave `channel` in the broker (the subscription was replaced, ended
    /// or lost, or the connection is closing).
    Leave {
        /// The channel.
        channel: String,
        /// The broker's id of the subscription.
        subscription: u64,
    },
    /// May this connection's principal call `method`? Answer with
    /// [`Input::RequestAuthorized`](super::Input::RequestAuthorized).
    AuthorizeRequest {
        /// The question.
        ticket: Ticket,
        /// The method.
        method: String,
    },
    /// Run this request (idempotency included) and answer with
    /// [`Input::Reply`](super::Input::Reply); exactly one
    /// `response` goes to the client.
    Call {
        /// The question.
        ticket: Ticket,
        /// The request.
        request: Request,
    },
    /// Close the connection with this code and reason. `discard_unsent`:
    /// drop what is queued but not yet written (the peer is not reading or
    /// is gone), else write it first. Nothing follows.
    Close {
        /// The close code.
        code: CloseCode,
        /// The close reason.
        reason: String,
        /// Whether queued frames are dropped instead of written first.
        discard_unsent: bool,
    },
    /// The peer closed (answer its close frame, if it sent one) or vanished.
    /// Nothing follows.
    PeerGone {
        /// The code of the peer's close frame, if any.
        code: Option<u16>,
    },
    /// Something worth counting or logging happened.
    Event(Event),
}

/// What a connection reports for metrics and logs.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The session is established (`welcome` queued).
    Connected {
        /// Its id (shared with the connection, one allocation).
        session: std::sync::Arc<str>,
    },
    /// The client broke a rule; its documented response is in the outputs.
    Violation(Violation),
    /// A frame that could not be used (malformed, unknown, binary).
    BadFrame,
    /// A request was answered without running: `denied`, `rate_limited`,
    /// `bad_request`.
    RequestRefused(&'static str),
    /// A `subscribe` was refused by a limit.
    SubscribeRefused,
    /// A resuming `subscribe` was answered; `recovered` says whether the
    /// history held everything missed.
    Resumed {
        /// Whether it resumed without loss.
        recovered: bool,
    },
    /// A heartbeat `ping` was sent.
    PingSent,
    /// The peer answered nothing within the heartbeat timeout (close 4000).
    Reaped,
}
