//! `disconnect_user` closes every connection of that user with 4003, and
//! no one else's.

use std::sync::Arc;

use super::{at, node_with, outputs};
use crate::close::CloseCode;
use crate::server::node::{ConnectionOrder, NodeConfig, NodeEvent, NodeOutput};

#[test]
fn every_connection_of_the_user_is_closed_4003_with_the_reason() {
    let (mut node, handles) = node_with(NodeConfig::default(), &["alice", "bob", "alice"]);
    assert_eq!(node.disconnect_user("alice", "banned"), 2);
    let close = ConnectionOrder::Close {
        code: CloseCode::FORBIDDEN,
        reason: "disconnected: banned".into(),
    };
    assert_eq!(
        outputs(&mut node),
        [
            NodeOutput::Order {
                connection: handles[0],
                order: close.clone()
            },
            NodeOutput::Order {
                connection: handles[2],
                order: close
            },
        ]
    );
}

#[test]
fn a_connection_not_yet_identified_or_gone_is_not_the_users() {
    let (mut node, handles) = node_with(NodeConfig::default(), &["alice"]);
    let anonymous = node.handle_connected(at(1));
    node.handle_event(at(2), handles[0], NodeEvent::Closed);
    // An identification that arrives after the close is ignored.
    node.handle_event(
        at(3),
        handles[0],
        NodeEvent::Identified {
            user: Arc::from("alice"),
        },
    );
    assert_eq!(node.disconnect_user("alice", "x"), 0);
    assert_eq!(node.connection_count(), 1);
    assert_eq!(node.user_of(anonymous), None);
}
