//! The node's decisions, one behaviour per file, in virtual time.

mod access;
mod disconnect_user;
mod drain;
mod keyed;
mod presence;
mod publication;
mod refresh;
mod reserved;

use std::sync::Arc;
use std::time::Duration;

use super::{ConnectionHandle, Node, NodeConfig, NodeEvent, NodeOutput};
use crate::time::Instant;

/// `ms` after the start.
fn at(ms: u64) -> Instant {
    Instant::ZERO.saturating_add(Duration::from_millis(ms))
}

/// A node with `config` and `users.len()` connections, the i-th identified
/// as `users[i]`.
fn node_with(config: NodeConfig, users: &[&str]) -> (Node, Vec<ConnectionHandle>) {
    let mut node = Node::new(config, Instant::ZERO);
    let handles = users
        .iter()
        .map(|user| {
            let handle = node.handle_connected(Instant::ZERO);
            node.handle_event(
                Instant::ZERO,
                handle,
                NodeEvent::Identified {
                    user: Arc::from(*user),
                },
            );
            handle
        })
        .collect();
    (node, handles)
}

/// Every output the node has now.
fn outputs(node: &mut Node) -> Vec<NodeOutput> {
    std::iter::from_fn(|| node.poll_output()).collect()
}
