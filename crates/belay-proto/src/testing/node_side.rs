//! The server's [`Node`] in a [`Pair`]: every connection the server
//! accepts is registered with it, identified as its client's user when it
//! is welcomed, and forgotten when it ends; the node's orders go to the
//! connections and its timers run on the pair's clock, as belay-server's
//! node driver does it. Presence too: a granted subscription the node
//! counts as a member is kept under the node's key, and its join and
//! leave are published on the channel the node names.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::server::{
    ConnectionHandle, Input, Lifecycle, Node, NodeConfig, NodeEvent, NodeOutput, PresenceKind,
};
use crate::time::Instant;

use super::records::{ClientId, ConnectionId};
use super::Pair;

/// The node and which of its handles is which connection.
#[derive(Debug)]
pub(super) struct NodeSide {
    pub(super) node: Node,
    handles: BTreeMap<ConnectionId, ConnectionHandle>,
    connections: BTreeMap<ConnectionHandle, ConnectionId>,
    pub(super) lifecycles: Vec<(Instant, Lifecycle)>,
    /// Each welcomed connection's session id.
    sessions: BTreeMap<ConnectionId, String>,
    /// Presence members: channel → key → user.
    presence: BTreeMap<String, BTreeMap<String, String>>,
    /// Joins and leaves to publish once the connection at hand is done.
    announcements: Vec<(String, serde_json::Value)>,
}

impl NodeSide {
    pub(super) fn new(config: NodeConfig, now: Instant) -> Self {
        NodeSide {
            node: Node::new(config, now),
            handles: BTreeMap::new(),
            connections: BTreeMap::new(),
            lifecycles: Vec::new(),
            sessions: BTreeMap::new(),
            presence: BTreeMap::new(),
            announcements: Vec::new(),
        }
    }

    /// `id` was accepted.
    pub(super) fn accepted(&mut self, now: Instant, id: ConnectionId) {
        let handle = self.node.handle_connected(now);
        self.handles.insert(id, handle);
        self.connections.insert(handle, id);
    }

    /// `id` was welcomed as `session`: it is its client's user's.
    pub(super) fn identified(&mut self, now: Instant, id: ConnectionId, session: &str) {
        self.sessions.insert(id, session.to_owned());
        if let Some(&handle) = self.handles.get(&id) {
            let user = Arc::from(id.client.user());
            self.node
                .handle_event(now, handle, NodeEvent::Identified { user });
        }
    }

    /// `id` ended.
    pub(super) fn closed(&mut self, now: Instant, id: ConnectionId) {
        self.sessions.remove(&id);
        if let Some(handle) = self.handles.remove(&id) {
            self.connections.remove(&handle);
            self.node.handle_event(now, handle, NodeEvent::Closed);
        }
    }
}

impl NodeSide {
    /// Subscription `subscription` of `id` to `channel` was granted (`join`)
    /// or ended.
    pub(super) fn presence(
        &mut self,
        id: ConnectionId,
        channel: &str,
        subscription: u64,
        join: bool,
    ) {
        let Some(session) = self.sessions.get(&id) else {
            return;
        };
        let Some(change) = self.node.presence_change(channel, session, subscription) else {
            return;
        };
        let members = self.presence.entry(channel.to_owned()).or_default();
        let changed = if join {
            members.insert(change.key, id.client.user()).is_none()
        } else {
            members.remove(&change.key).is_some()
        };
        if let (true, Some(on)) = (changed, change.announce_on) {
            let kind = if join {
                PresenceKind::Join
            } else {
                PresenceKind::Leave
            };
            let member = serde_json::json!({ "client": session, "user": id.client.user() });
            self.announcements
                .push((on, serde_json::json!({ kind.as_str(): member })));
        }
    }
}

impl ClientId {
    /// The user a client's credentials name in a pair (`client-N`).
    pub fn user(self) -> String {
        format!("client-{}", self.0)
    }
}

impl Pair {
    /// The server's node.
    pub fn node(&self) -> &Node {
        &self.node.node
    }

    /// The users present in `channel` now, one per subscription, sorted.
    pub fn presence(&self, channel: &str) -> Vec<String> {
        let mut users: Vec<String> = self
            .node
            .presence
            .get(channel)
            .map(|members| members.values().cloned().collect())
            .unwrap_or_default();
        users.sort();
        users
    }

    /// Every lifecycle the node went through, with its time.
    pub fn lifecycles(&self) -> &[(Instant, Lifecycle)] {
        &self.node.lifecycles
    }

    /// A new node with `config` (before the clients connect: the server's
    /// configuration).
    pub fn set_node_config(&mut self, config: NodeConfig) {
        assert!(
            self.server.connections.is_empty(),
            "set the node's configuration before the clients connect"
        );
        self.node = NodeSide::new(config, self.now());
    }

    /// The node starts a graceful drain now; whether it started.
    pub fn start_drain(&mut self) -> bool {
        let now = self.now();
        let started = self.node.node.start_drain(now);
        self.carry_out_node();
        started
    }

    /// The node closes every connection of `client`'s user (4003); how many.
    pub fn disconnect_user(&mut self, client: ClientId, reason: &str) -> usize {
        let closed = self.node.node.disconnect_user(&client.user(), reason);
        self.carry_out_node();
        closed
    }

    /// Fire the node's timers due now.
    pub(super) fn node_timeouts(&mut self) {
        let now = self.now();
        if self.node.node.poll_timeout().is_some_and(|at| at <= now) {
            self.node.node.handle_timeout(now);
        }
        self.host_timeouts();
        self.carry_out_node();
    }

    /// Carry out the node's outputs: its orders to the connections, its
    /// lifecycle into the record. (Exhaustive matches: inside the core, a
    /// new output does not compile until the pair carries it out.)
    pub(super) fn carry_out_node(&mut self) {
        self.carry_out_host_calls();
        for (channel, data) in std::mem::take(&mut self.node.announcements) {
            self.publish(&channel, data);
        }
        let now = self.now();
        while let Some(output) = self.node.node.poll_output() {
            match output {
                NodeOutput::Order { connection, order } => {
                    if let Some(&id) = self.node.connections.get(&connection) {
                        self.with_connection(id, |conn| {
                            conn.handle_input(now, Input::Order(order));
                        });
                    }
                }
                NodeOutput::Lifecycle(lifecycle) => self.node.lifecycles.push((now, lifecycle)),
            }
        }
    }
}
