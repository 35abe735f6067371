//! The node's driver: the server-wide core ([`belay_proto::server::Node`])
//! behind one lock, its outputs carried to the connections' mailboxes and
//! the lifecycle watch, and its timer run on a task while it has one (a
//! drain).
//!
//! Lock order: the node, then the connections' mailboxes; nothing takes
//! them the other way round.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use belay_proto::server::{
    ConnectionHandle, ConnectionOrder, Lifecycle, Node, NodeEvent, NodeOutput,
};

use crate::mailbox::{Control, ControlSender};
use crate::metrics::{lock, Metrics};
use crate::shared::Shared;
use crate::unhandled::Unhandled;

impl Shared {
    /// Run `f` on the node, then carry out what it asked for.
    pub(crate) fn with_node<R>(&self, f: impl FnOnce(&mut Node) -> R) -> R {
        let mut node = lock(&self.node);
        let result = f(&mut node);
        self.carry_out(&mut node);
        result
    }

    /// A new connection, reachable through `control`.
    pub(crate) fn register(&self, control: ControlSender) -> ConnectionHandle {
        let now = self.clock.now();
        let mut node = lock(&self.node);
        let handle = node.handle_connected(now);
        lock(&self.connections).insert(handle, control);
        handle
    }

    /// Connection `handle` is gone.
    pub(crate) fn unregister(&self, handle: ConnectionHandle) {
        let now = self.clock.now();
        self.with_node(|node| {
            lock(&self.connections).remove(&handle);
            node.handle_event(now, handle, NodeEvent::Closed);
        });
    }

    /// Connection `handle` is `user`'s (its credentials were accepted).
    pub(crate) fn identify(&self, handle: ConnectionHandle, user: &str) {
        let now = self.clock.now();
        let user = Arc::from(user);
        self.with_node(|node| node.handle_event(now, handle, NodeEvent::Identified { user }));
    }

    /// Start the drain once; later calls do nothing.
    pub(crate) fn start_drain(self: &Arc<Self>) {
        let now = self.clock.now();
        if self.with_node(|node| node.start_drain(now)) {
            tokio::spawn(run_timers(Arc::clone(self)));
        }
    }

    /// Cut the drain short: what is left closes 1001 now.
    pub(crate) fn end_drain(&self) {
        let now = self.clock.now();
        self.with_node(|node| node.end_drain(now));
    }

    fn carry_out(&self, node: &mut Node) {
        while let Some(output) = node.poll_output() {
            if let Err(unhandled) = self.carry_out_one(output) {
                unhandled.report();
            }
        }
        self.metrics
            .drain_remaining
            .store(drain_remaining(node), Ordering::Relaxed);
    }

    /// Carry out one output of the node.
    fn carry_out_one(&self, output: NodeOutput) -> Result<(), Unhandled> {
        match output {
            NodeOutput::Order { connection, order } => self.order(connection, order),
            NodeOutput::Lifecycle(lifecycle) => self.lifecycle_changed(lifecycle),
            other => return Err(Unhandled::new("node output", &other)),
        }
        Ok(())
    }

    fn order(&self, connection: ConnectionHandle, order: ConnectionOrder) {
        let advice = matches!(order, ConnectionOrder::Advise(_));
        let sent = lock(&self.connections)
            .get(&connection)
            .is_some_and(|control| control.send(Control::Order(order)).is_ok());
        if sent && advice {
            Metrics::add(&self.metrics.drain_advised);
        }
    }

    fn lifecycle_changed(&self, lifecycle: Lifecycle) {
        let (state, detail) = match lifecycle {
            Lifecycle::Draining => (
                "draining",
                "readiness 503; advising clients after the balancer delay",
            ),
            Lifecycle::Drained => ("drained", "drained"),
            _ => ("serving", "serving"),
        };
        crate::logs::lifecycle(state, self.metrics.open_connections());
        self.emit("drain", detail.into());
        self.lifecycle.send_replace(lifecycle);
    }
}

/// Connections left to drain (0 when not draining).
fn drain_remaining(node: &Node) -> i64 {
    match node.lifecycle() {
        Lifecycle::Draining => i64::try_from(node.connection_count()).unwrap_or(i64::MAX),
        _ => 0,
    }
}

/// Wake the node at each instant it asks for, until it asks for none.
async fn run_timers(shared: Arc<Shared>) {
    let mut lifecycle = shared.lifecycle.subscribe();
    loop {
        let Some(at) = lock(&shared.node).poll_timeout() else {
            break;
        };
        tokio::select! {
            () = tokio::time::sleep_until(shared.clock.to_std(at).into()) => {}
            // Drained early (the last connection left): look again.
            _ = lifecycle.changed() => {}
        }
        let now = shared.clock.now();
        shared.with_node(|node| node.handle_timeout(now));
    }
}

#[cfg(test)]
mod tests {
    use belay_proto::every_variant::EveryVariant;
    use belay_proto::server::NodeOutput;

    /// One value of every node output through the real dispatch: a
    /// variant added to the core fails here until the driver handles it.
    #[tokio::test]
    async fn every_node_output_is_carried_out() {
        let server = crate::Server::builder().build();
        for output in NodeOutput::every_variant() {
            let shown = format!("{output:?}");
            assert!(
                server.shared.carry_out_one(output).is_ok(),
                "the server does not carry out {shown}"
            );
        }
    }
}
