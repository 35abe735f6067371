//! Names and records: which client, which connection, and what happened on
//! the server side, for assertions.

use std::fmt;

use crate::server::Event as ServerEvent;
use crate::time::Instant;
use crate::transport::TransportId;

/// One client of a [`Pair`](super::Pair), in the order they were added
/// (the constructors add [`ClientId::FIRST`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientId(pub(super) usize);

impl ClientId {
    /// The client [`Pair::new`](super::Pair::new) and
    /// [`Pair::with_limits`](super::Pair::with_limits) start with.
    pub const FIRST: ClientId = ClientId(0);

    /// Its index among the pair's clients.
    pub fn index(self) -> usize {
        self.0
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}", self.0)
    }
}

/// One server connection: the client that dialled it and the client's id
/// of the transport (each client numbers its own transports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub struct ConnectionId {
    /// The client.
    pub client: ClientId,
    /// The client's transport.
    pub transport: TransportId,
}

impl ConnectionId {
    pub(super) fn new(client: ClientId, transport: TransportId) -> Self {
        ConnectionId { client, transport }
    }
}

/// What happened on the server side, for assertions.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerRecord {
    /// A connection was set up.
    Accepted {
        /// When.
        at: Instant,
        /// Which.
        id: ConnectionId,
    },
    /// The server closed a connection with this code.
    Closed {
        /// When.
        at: Instant,
        /// Which.
        id: ConnectionId,
        /// Its close code.
        code: u16,
    },
    /// The client closed it (or its close arrived).
    PeerGone {
        /// When.
        at: Instant,
        /// Which.
        id: ConnectionId,
    },
    /// Something the server connection reported.
    Event {
        /// When.
        at: Instant,
        /// Which.
        id: ConnectionId,
        /// What.
        event: ServerEvent,
    },
}

impl ServerRecord {
    /// The connection it is about.
    pub fn id(&self) -> ConnectionId {
        match self {
            ServerRecord::Accepted { id, .. }
            | ServerRecord::Closed { id, .. }
            | ServerRecord::PeerGone { id, .. }
            | ServerRecord::Event { id, .. } => *id,
        }
    }
}
