//! What every part of a running server shares: the state behind the
//! [`Server`] handle, mostly handles (the node's lock, the broker, the
//! authenticator, the mailboxes). The connection driver, the upgrade,
//! requests, the hosts and the SSE fallback all use this module; it uses
//! only leaves that import none of them (config, clock, metrics, auth,
//! broker, mailbox, events, stream, `host_waiters`, `sse_streams`,
//! `sse_relay`, `method_table`), so the server's parts do not import each
//! other in a loop (`scripts/module-cycles.py crates/belay-server/src` in
//! the test command). The application's methods are held as a
//! [`MethodTable`] of this module's [`Server`]: `rpc`, whose `CallContext`
//! holds the `Server`, implements it. `server.rs` builds the state and
//! puts the public API on the handle; `node.rs` drives the server-wide
//! core.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use belay_proto::message::Reply;
use belay_proto::server::{ConnectionHandle, KeyedRun, Node};
use tokio::sync::{broadcast, watch};

use crate::auth::Authenticator;
use crate::broker::Broker;
use crate::clock::Clock;
use crate::config::ServerConfig;
use crate::method_table::MethodTable;
use crate::metrics::Metrics;
use crate::stream::StreamLayer;

pub use belay_proto::server::Lifecycle;

/// What every connection task shares.
pub(crate) struct Shared {
    pub(crate) config: ServerConfig,
    pub(crate) clock: Clock,
    /// The application's methods ([`crate::rpc::Methods`]).
    pub(crate) methods: Box<dyn MethodTable<Server>>,
    pub(crate) auth: Arc<dyn Authenticator>,
    pub(crate) broker: Arc<dyn Broker>,
    /// Where presence members are kept (the broker's, else this node's).
    pub(crate) presence: Arc<dyn crate::broker::PresenceStore>,
    pub(crate) metrics: Metrics,
    /// Bytes queued for writing over all connections.
    pub(crate) outbound_total: Arc<AtomicUsize>,
    /// `config.limits`, shared by every connection's outbound queue.
    pub(crate) limits: Arc<belay_proto::server::Limits>,
    /// The server-wide decisions (`belay_proto::server::Node`): connections
    /// and users, the drain, access routes, presence keys, the reserved
    /// methods, keyed requests, refresh rules, resident hosts, admission,
    /// per-source bounds and reconnect pacing.
    pub(crate) node: Mutex<Node>,
    /// Each connection's mailbox, for the node's orders.
    pub(crate) connections: Mutex<HashMap<ConnectionHandle, crate::mailbox::ControlSender>>,
    pub(crate) stream_layer: Option<Arc<dyn StreamLayer>>,
    pub(crate) lifecycle: watch::Sender<Lifecycle>,
    /// Live feed of server events (connects, closes, drain, and what
    /// extensions announce).
    pub(crate) events: broadcast::Sender<crate::events::ServerEvent>,
    /// Retries of an idempotent request that is still running wait here.
    pub(crate) idempotent_waiters: Mutex<HashMap<KeyedRun, broadcast::Sender<Reply>>>,
    /// The SSE streams this node holds.
    pub(crate) sse: Arc<crate::sse_streams::Streams>,
    /// Where a send for another node's stream goes (a cluster).
    pub(crate) sse_relay: Option<Arc<dyn crate::sse_relay::SseRelay>>,
    /// The callers waiting for a host call's verdict (docs/HOSTS.md).
    pub(crate) hosts: crate::host_waiters::HostRegistry,
    /// The admin web UI's logins and live feed.
    pub(crate) admin: crate::admin_state::AdminState<Server>,
}

impl Shared {
    /// The prefix of this node's stream ids (in a cluster).
    pub(crate) fn node_id(&self) -> Option<&str> {
        self.sse_relay
            .as_deref()
            .map(crate::sse_relay::SseRelay::node)
    }
}

impl Shared {
    /// Publish a server event (dropped if nobody listens).
    pub(crate) fn emit(&self, kind: &'static str, detail: String) {
        let event = crate::events::ServerEvent {
            at_ms: self.clock.now().as_millis(),
            kind,
            detail,
            connections: self.metrics.open_connections(),
        };
        let _ = self.events.send(event);
    }
}

/// A Belay server. Cheap to clone; all clones are the same server.
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("connections", &self.shared.metrics.open_connections())
            .finish_non_exhaustive()
    }
}
