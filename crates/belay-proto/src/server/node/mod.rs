//! [`Node`]: the server-wide machine.

mod access;
mod drain;
mod keyed;
mod presence;
mod publication;
mod refresh;
mod registry;
mod reserved;

#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::sync::Arc;

pub use access::{AccessRoute, Caller, USER_CHANNEL_PREFIX};
pub use keyed::{KeyedAdmit, KeyedRun};
pub use presence::{PresenceChange, PresenceKind, PRESENCE_CHANNEL_PREFIX};
pub use publication::{max_publication_frame_len, PublicationRefused, EPOCH_ALLOWANCE};
pub use refresh::Identity;
pub use registry::ConnectionHandle;
pub use reserved::{
    ReservedCall, ANSWER_METHOD, CALL_METHOD, PRESENCE_METHOD, PRESENCE_STATS_METHOD,
    PUBLISH_METHOD,
};

use self::drain::DrainRun;
use self::registry::Registry;
use super::{
    DrainConfig, DrainPhase, HostCalls, HostCallsConfig, IdempotencyCache, Namespaces,
    SourceLimits, SourceTable, TokenBucket, DEFAULT_MAX_CHANNEL_LEN,
};
use crate::close::CloseCode;
use crate::fleet::FleetPacing;
use crate::message::ReconnectAdvice;
use crate::time::Instant;

/// Where the server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lifecycle {
    /// Accepting sessions.
    Serving,
    /// Draining: readiness answers 503, new sessions are refused.
    Draining,
    /// Every connection is gone (or the drain deadline passed).
    Drained,
}

/// What the node needs to know of the server's configuration. `Default`
/// plus setters.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NodeConfig {
    namespaces: Namespaces,
    drain: DrainConfig,
    max_publication_len: usize,
    max_channel_len: usize,
    host_calls: HostCallsConfig,
    max_keyed_running: usize,
}

impl Default for NodeConfig {
    fn default() -> Self {
        NodeConfig {
            namespaces: Namespaces::new(),
            drain: DrainConfig::default(),
            max_publication_len: 64 * 1024,
            max_channel_len: DEFAULT_MAX_CHANNEL_LEN,
            host_calls: HostCallsConfig::default(),
            max_keyed_running: 4_096,
        }
    }
}

impl NodeConfig {
    /// The channels' rules (access, presence, history).
    pub fn namespaces(&self) -> &Namespaces {
        &self.namespaces
    }

    /// See [`namespaces`](Self::namespaces).
    pub fn set_namespaces(&mut self, value: Namespaces) -> &mut Self {
        self.namespaces = value;
        self
    }

    /// How the server drains.
    pub fn drain(&self) -> &DrainConfig {
        &self.drain
    }

    /// See [`drain`](Self::drain).
    pub fn set_drain(&mut self, value: DrainConfig) -> &mut Self {
        self.drain = value;
        self
    }

    /// The longest `publication` frame a publish may make, in bytes.
    /// Default: 64 KiB.
    pub fn max_publication_len(&self) -> usize {
        self.max_publication_len
    }

    /// See [`max_publication_len`](Self::max_publication_len).
    pub fn set_max_publication_len(&mut self, value: usize) -> &mut Self {
        self.max_publication_len = value;
        self
    }

    /// The longest channel name, in bytes. Default:
    /// [`DEFAULT_MAX_CHANNEL_LEN`].
    pub fn max_channel_len(&self) -> usize {
        self.max_channel_len
    }

    /// See [`max_channel_len`](Self::max_channel_len).
    pub fn set_max_channel_len(&mut self, value: usize) -> &mut Self {
        self.max_channel_len = value;
        self
    }

    /// The resident hosts' bounds and timing.
    pub fn host_calls(&self) -> &HostCallsConfig {
        &self.host_calls
    }

    /// See [`host_calls`](Self::host_calls).
    pub fn set_host_calls(&mut self, value: HostCallsConfig) -> &mut Self {
        self.host_calls = value;
        self
    }

    /// The most keyed executions running at once. Default: 4,096.
    pub fn max_keyed_running(&self) -> usize {
        self.max_keyed_running
    }

    /// See [`max_keyed_running`](Self::max_keyed_running).
    pub fn set_max_keyed_running(&mut self, value: usize) -> &mut Self {
        self.max_keyed_running = value;
        self
    }
}

/// What happened to one connection, for the node (connection → node).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeEvent {
    /// The connection's credentials were accepted: it is `user`'s.
    Identified {
        /// Its user.
        user: Arc<str>,
    },
    /// The connection is gone.
    Closed,
}

/// An order for one connection (node → connection): the driver hands it
/// to that connection's core.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionOrder {
    /// Send this reconnect advice (a drain's first step).
    Advise(ReconnectAdvice),
    /// Close 1012 once the requests in flight are answered, at `until` at
    /// the latest ([`Connection::drain`](super::Connection::drain)).
    Drain {
        /// The drain's deadline.
        until: Instant,
    },
    /// Close now with this code and reason.
    Close {
        /// The close code.
        code: CloseCode,
        /// The close reason.
        reason: String,
    },
}

/// What the node asks of its driver.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeOutput {
    /// Hand `order` to `connection`.
    Order {
        /// Which connection.
        connection: ConnectionHandle,
        /// What to do.
        order: ConnectionOrder,
    },
    /// The server's lifecycle changed to this.
    Lifecycle(Lifecycle),
}

/// The decisions that span connections or the whole server, as
/// one sans-IO machine (quinn-proto's `Endpoint` to the [`Connection`](super::Connection)s).
///
/// A server holds one `Node` and one [`Connection`](super::Connection) per client. The node
/// never touches a connection: the driver tells it what happened to each
/// one ([`handle_event`](Node::handle_event) with a [`NodeEvent`]) and
/// carries its orders back ([`NodeOutput::Order`] with a
/// [`ConnectionOrder`]), as quinn carries `EndpointEvent`s and
/// `ConnectionEvent`s. Like the connection, the node reads no clock: `now`
/// comes in with every input, and [`poll_timeout`](Node::poll_timeout)
/// says when it wants [`handle_timeout`](Node::handle_timeout).
///
/// What it decides:
///
/// | Part | File | Decision |
/// |---|---|---|
/// | registry | `registry.rs` | which connections are whose; [`disconnect_user`](Node::disconnect_user)'s close (4003) |
/// | drain | `drain.rs` | a graceful drain run on [`DrainPlan`](super::DrainPlan): advice, close 1012 at the plan's instants, 1001 for what is left at the deadline |
/// | access | `access.rs` | which rule or authenticator hook decides a subscribe or a client publish ([`AccessRoute`]) |
/// | presence | `presence.rs` | whether a subscription is a presence member, its key, and whether its join and leave are announced |
/// | reserved methods | `reserved/` | `$publish`, `$presence`, `$presence_stats`, `$call`, `$answer`: their typed params, refusals and checks |
/// | publications | `publication.rs` | the longest frame a publication can make, checked before the broker is asked |
/// | refresh | `refresh.rs` | a refresh keeps the user and the host; which subscriptions the new grants must allow again |
/// | keyed requests | `keyed.rs` | an idempotency key's scope (user and method), its outcome cache, and the bound on keyed executions running at once |
/// | admission, sources, pacing | [`TokenBucket`], [`SourceTable`], [`FleetPacing`] | the sessions admitted per second, each source's share, the reconnect slot of each welcome, held by the node ([`admission_mut`](Node::admission_mut), [`sources_mut`](Node::sources_mut), [`pacing_mut`](Node::pacing_mut)) |
/// | resident hosts | [`HostCalls`] | the host table and every call's life (admit, wake bound, delivery, answer, deadline, `host_lost`), held by the node and reached through [`host_calls_mut`](Node::host_calls_mut) |
///
/// The driver's run loop:
///
/// ```text
/// accept ─▶ node.handle_connected(now) ─▶ handle
/// welcome ─▶ node.handle_event(now, handle, NodeEvent::Identified { user })
/// close   ─▶ node.handle_event(now, handle, NodeEvent::Closed)
/// loop {
///     while let Some(out) = node.poll_output() {
///         Order { connection, order } ─▶ that connection's mailbox
///         Lifecycle(state)            ─▶ readiness, `drained()` waiters
///     }
///     sleep until node.poll_timeout(), then node.handle_timeout(now)
/// }
/// ```
#[derive(Debug)]
pub struct Node {
    config: NodeConfig,
    registry: Registry,
    lifecycle: Lifecycle,
    drain: Option<DrainRun>,
    host_calls: HostCalls,
    idempotency: IdempotencyCache,
    keyed_running: usize,
    admission: TokenBucket,
    pacing: FleetPacing,
    sources: SourceTable,
    outputs: VecDeque<NodeOutput>,
}

impl Node {
    /// A serving node with no connections, started at `now`: its outcomes
    /// cache keeps them 5 minutes (100,000 at most), it admits 500 sessions
    /// a second (a burst of as many), paces reconnects for that rate, and
    /// holds no per-source bounds; the `with_*` methods set each.
    pub fn new(config: NodeConfig, now: Instant) -> Self {
        Node {
            host_calls: HostCalls::new(config.host_calls.clone()),
            idempotency: IdempotencyCache::new(std::time::Duration::from_secs(300), 100_000),
            keyed_running: 0,
            admission: TokenBucket::new(500.0, 500.0, now, true),
            pacing: FleetPacing::new(500.0, now),
            sources: SourceTable::new(SourceLimits::default()),
            config,
            registry: Registry::default(),
            lifecycle: Lifecycle::Serving,
            drain: None,
            outputs: VecDeque::new(),
        }
    }

    /// The outcomes cache of keyed requests (retention, bounds).
    pub fn with_idempotency(mut self, cache: IdempotencyCache) -> Self {
        self.idempotency = cache;
        self
    }

    /// The admission bucket: sessions admitted per second.
    pub fn with_admission(mut self, bucket: TokenBucket) -> Self {
        self.admission = bucket;
        self
    }

    /// The reconnect pacing advertised in `welcome`.
    pub fn with_pacing(mut self, pacing: FleetPacing) -> Self {
        self.pacing = pacing;
        self
    }

    /// The per-source table (connections, pending upgrades, admissions
    /// and work per source).
    pub fn with_sources(mut self, sources: SourceTable) -> Self {
        self.sources = sources;
        self
    }

    // ----- getters -----

    /// The configuration.
    pub fn config(&self) -> &NodeConfig {
        &self.config
    }

    /// Where the server is in its life.
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle
    }

    /// Connections open now.
    pub fn connection_count(&self) -> usize {
        self.registry.len()
    }

    /// The open connections of `user`, in accept order.
    pub fn connections_of(&self, user: &str) -> Vec<ConnectionHandle> {
        self.registry.of_user(user).collect()
    }

    /// The user of `connection`, once identified.
    pub fn user_of(&self, connection: ConnectionHandle) -> Option<&Arc<str>> {
        self.registry.user(connection)
    }

    /// When `connection` was accepted (`handle_connected`'s `now`), while
    /// it is open.
    pub fn connected_at(&self, connection: ConnectionHandle) -> Option<Instant> {
        self.registry.since(connection)
    }

    /// Where a drain is at `now`, if one started.
    pub fn drain_phase(&self, now: Instant) -> Option<DrainPhase> {
        self.drain.as_ref().map(|run| run.phase(now))
    }

    /// The resident hosts' machine (its own inputs, outputs and timers:
    /// each call's deadline is [`HostCalls::call_timeout`]).
    pub fn host_calls(&self) -> &HostCalls {
        &self.host_calls
    }

    /// See [`host_calls`](Self::host_calls).
    pub fn host_calls_mut(&mut self) -> &mut HostCalls {
        &mut self.host_calls
    }

    /// The admission bucket ([`TokenBucket`]): its inputs take `now`.
    pub fn admission_mut(&mut self) -> &mut TokenBucket {
        &mut self.admission
    }

    /// The reconnect pacing ([`FleetPacing`]): the slot of each welcome.
    pub fn pacing_mut(&mut self) -> &mut FleetPacing {
        &mut self.pacing
    }

    /// The per-source table ([`SourceTable`]).
    pub fn sources(&self) -> &SourceTable {
        &self.sources
    }

    /// See [`sources`](Self::sources).
    pub fn sources_mut(&mut self) -> &mut SourceTable {
        &mut self.sources
    }

    // ----- inputs -----

    /// A connection was accepted: its handle for every later event.
    pub fn handle_connected(&mut self, now: Instant) -> ConnectionHandle {
        self.registry.add(now)
    }

    /// Something happened to `connection`.
    pub fn handle_event(&mut self, now: Instant, connection: ConnectionHandle, event: NodeEvent) {
        match event {
            NodeEvent::Identified { user } => self.registry.identify(connection, user),
            NodeEvent::Closed => {
                self.registry.remove(connection);
                self.after_change(now);
            }
        }
    }

    /// Time passed: act on whatever is due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.after_change(now);
    }

    // ----- commands -----

    /// Start a graceful drain at `now` (readiness 503 at once; advice and
    /// closes at the [`DrainPlan`](super::DrainPlan)'s instants). Returns
    /// whether it started (a second call does nothing).
    pub fn start_drain(&mut self, now: Instant) -> bool {
        if self.lifecycle != Lifecycle::Serving {
            return false;
        }
        self.drain = Some(DrainRun::new(now, self.config.drain.clone()));
        self.set_lifecycle(Lifecycle::Draining);
        self.after_change(now);
        true
    }

    /// Cut the drain short at `now` (an operator's second signal): every
    /// connection left is closed at once with the deadline's 1001 `server
    /// shutting down`, and the node is `Drained`. Starts the drain first
    /// if it had not started (readiness 503). Does nothing once drained.
    pub fn end_drain(&mut self, now: Instant) {
        self.start_drain(now);
        if let Some(run) = self.drain.as_mut() {
            run.end_at(now);
        }
        self.after_change(now);
    }

    /// Close every connection of `user` with 4003 `disconnected: REASON` (a
    /// final close: Belay clients stop reconnecting). Returns how many.
    pub fn disconnect_user(&mut self, user: &str, reason: &str) -> usize {
        let reason = format!("disconnected: {reason}");
        let targets = self.connections_of(user);
        for &connection in &targets {
            self.outputs.push_back(NodeOutput::Order {
                connection,
                order: ConnectionOrder::Close {
                    code: CloseCode::FORBIDDEN,
                    reason: reason.clone(),
                },
            });
        }
        targets.len()
    }

    // ----- outputs -----

    /// The next thing for the driver to do.
    pub fn poll_output(&mut self) -> Option<NodeOutput> {
        self.outputs.pop_front()
    }

    /// When the node next wants [`handle_timeout`](Self::handle_timeout).
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (&self.drain, self.lifecycle) {
            (Some(run), Lifecycle::Draining) => run.poll_timeout(),
            _ => None,
        }
    }

    // ----- internals -----

    fn after_change(&mut self, now: Instant) {
        let Some(run) = self.drain.as_mut() else {
            return;
        };
        if self.lifecycle != Lifecycle::Draining {
            return;
        }
        let finished = run.step(now, &self.registry, &mut self.outputs);
        if finished || self.registry.is_empty() {
            self.set_lifecycle(Lifecycle::Drained);
        }
    }

    fn set_lifecycle(&mut self, lifecycle: Lifecycle) {
        if self.lifecycle != lifecycle {
            self.lifecycle = lifecycle;
            self.outputs.push_back(NodeOutput::Lifecycle(lifecycle));
        }
    }
}
