//! The input model of the `server_connection` target: what `Arbitrary`
//! decodes the fuzzer's bytes into.

use arbitrary::Arbitrary;

/// Channel names a frame can name (the last is over the 255-byte limit).
pub(super) fn channel(index: u8) -> String {
    match index % 4 {
        0 => "news".into(),
        1 => "feed".into(),
        2 => String::new(),
        _ => "x".repeat(300),
    }
}

/// A client frame from the model.
#[derive(Debug, Clone, Arbitrary)]
pub enum ClientFrame {
    /// `connect` in our version (or another), with or without a token.
    Connect {
        /// Whether the version is ours.
        ours: bool,
        /// Whether a token is sent.
        token: bool,
    },
    /// A `request`.
    Request {
        /// Its id.
        id: u8,
        /// With an idempotency key.
        keyed: bool,
    },
    /// A `subscribe`, maybe resuming.
    Subscribe {
        /// Which channel.
        channel: u8,
        /// A resume position (epoch index, offset).
        since: Option<(bool, u8)>,
    },
    /// An `unsubscribe`.
    Unsubscribe {
        /// Which channel.
        channel: u8,
    },
    /// `ping`.
    Ping,
    /// `pong`.
    Pong,
    /// A type the server does not know.
    Unknown,
    /// A request whose method is not a string (its id still readable).
    BadRequest {
        /// Its id.
        id: u8,
    },
}

/// An answer to the oldest question of a kind.
#[derive(Debug, Clone, Copy, Arbitrary)]
pub enum Answer {
    /// Accept (expiring `in` seconds from now, when set), or refuse.
    Auth {
        /// Accepted.
        accept: bool,
        /// Expiry, seconds from now.
        expires_in: Option<u8>,
    },
    /// Authorize a subscribe or refuse it.
    Subscribe(bool),
    /// The broker's answer to a join: 0 joined, 1 no room, 2 unavailable.
    Join(u8),
    /// Authorize a request or refuse it.
    Request(bool),
    /// A called request's outcome: result or error.
    Reply(bool),
}

/// One step of the input.
#[derive(Debug, Clone, Arbitrary)]
pub enum Step {
    /// A model frame.
    Frame(ClientFrame),
    /// Any text.
    Text(String),
    /// Any binary frame (a message of a binary connection, a violation
    /// of a JSON one).
    Binary(Vec<u8>),
    /// A WebSocket ping with a payload.
    WsPing(Vec<u8>),
    /// A WebSocket pong.
    WsPong,
    /// The peer's close frame.
    PeerClose(Option<u16>),
    /// A transport failure (index into the kinds).
    TransportError(u8),
    /// Time moves (ms), firing what is due on the way.
    Wait(u16),
    /// Time moves (s).
    LongWait(u8),
    /// Answer the oldest question of that kind.
    Answer(Answer),
    /// The upgrade chose the binary codec: from here on the model frames
    /// go binary (the connection ignores it after its first frame, and
    /// the harness then keeps the codec the connection has).
    UseBinaryCodec,
    /// Answer a ticket the connection never issued.
    Stray(Answer),
    /// Answer the newest question instead of the oldest.
    AnswerNewest(Answer),
    /// A live publication for a joined subscription (or a stale one).
    Live {
        /// Which of the joined subscriptions.
        pick: u8,
        /// Its offset.
        offset: u8,
        /// Use a subscription id the connection does not hold.
        stale: bool,
    },
    /// The broker lags a joined subscription.
    Lagged(u8),
    /// Drain advice.
    Advise,
    /// Close with a code.
    Close(u16),
    /// Drain, closing within so many seconds.
    Drain(u8),
    /// The outbound queue is full.
    QueueFull,
    /// The broker is down.
    UnsubscribeAll,
    /// Refused by admission.
    RefuseOverload(u16),
    /// The broker ends a joined subscription (`unavailable` when the flag
    /// is set, else an error code of its own).
    Ended(u8, bool),
}

/// A whole input: the connection's limits are the defaults with small
/// bounds, so they are reached.
#[derive(Debug, Clone, Arbitrary)]
pub struct ConnectionInput {
    /// The steps, in order.
    pub steps: Vec<Step>,
}
