//! The state of one connection's task: its core, its outbound queue, its
//! mailbox, and what it learned of its client.

use std::net::SocketAddr;
use std::sync::Arc;

use belay_proto::server::{Connection, ConnectionHandle, Ticket};
use belay_proto::Instant;
use bytes::Bytes;

use crate::auth::Principal;
use crate::broker::{LiveInbox, SubscriberId};
use crate::mailbox::ControlSender;
use crate::outbound::Outbound;
use crate::peer_limits::PeerSlot;
use crate::requests::RequestSet;
use crate::shared::Shared;

pub(super) struct Driver {
    pub(super) shared: Arc<Shared>,
    pub(super) core: Connection<Bytes>,
    pub(super) out: Outbound,
    pub(super) control: ControlSender,
    /// Made at the first subscribe (an idle connection holds none).
    pub(super) inbox: Option<LiveInbox>,
    /// Subscriptions whose broker answers later, with the core's ticket.
    pub(super) joining: Vec<(SubscriberId, Ticket)>,
    pub(super) requests: RequestSet,
    /// Who the client is, once authenticated.
    /// Boxed: the connection future must stay in the 2 KiB task class.
    pub(super) principal: Box<Principal>,
    /// The session id, once welcomed.
    pub(super) session: Arc<str>,
    pub(super) peer: SocketAddr,
    /// What counts the connection against its source (released when the
    /// connection ends), and so what its frames are paced against (`None`,
    /// or a slot without a key: a trusted proxy, not paced).
    pub(super) slot: Option<PeerSlot>,
    /// While the source is past its share, the time reads resume
    /// ([`Instant::ZERO`]: reading). Not an `Option`: the connection
    /// future stays in its size class.
    pub(super) reads_at: Instant,
    /// This connection's id in the server's registry.
    pub(super) id: ConnectionHandle,
}

impl Driver {
    /// The driver of a connection not yet authenticated.
    pub(super) fn new(
        shared: &Arc<Shared>,
        core: Connection<Bytes>,
        control: ControlSender,
        peer: SocketAddr,
        slot: Option<PeerSlot>,
        id: ConnectionHandle,
    ) -> Self {
        Driver {
            shared: Arc::clone(shared),
            core,
            out: Outbound::new(Arc::clone(&shared.outbound_total)),
            control,
            inbox: None,
            joining: Vec::new(),
            requests: RequestSet::default(),
            principal: Box::new(Principal::anonymous()),
            session: Arc::from(""),
            peer,
            slot,
            reads_at: Instant::ZERO,
            id,
        }
    }
}
