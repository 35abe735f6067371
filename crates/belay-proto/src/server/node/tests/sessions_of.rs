//! `sessions_of` lists a user's open connections with what their welcomes
//! said (session, transport, codec), for an operator's lookup by user.

use std::sync::Arc;

use super::{at, node_with};
use crate::message::Codec;
use crate::server::node::{NodeConfig, NodeEvent};

fn welcomed(session: &str, transport: &'static str, codec: Codec) -> NodeEvent {
    NodeEvent::Welcomed {
        session: Arc::from(session),
        transport,
        codec,
    }
}

#[test]
fn a_users_sessions_carry_their_transport_and_codec_in_accept_order() {
    let (mut node, handles) = node_with(NodeConfig::default(), &["alice", "bob", "alice"]);
    node.handle_event(at(1), handles[0], welcomed("s-1", "websocket", Codec::Json));
    node.handle_event(at(1), handles[1], welcomed("s-2", "websocket", Codec::Json));
    node.handle_event(at(2), handles[2], welcomed("s-3", "sse", Codec::Binary));
    let alice = node.sessions_of("alice");
    assert_eq!(alice.len(), 2);
    assert_eq!(alice[0].connection, handles[0]);
    assert_eq!(alice[0].session.as_deref(), Some("s-1"));
    assert_eq!(alice[0].transport, Some("websocket"));
    assert_eq!(alice[0].codec, Some(Codec::Json));
    assert_eq!(alice[1].session.as_deref(), Some("s-3"));
    assert_eq!(alice[1].transport, Some("sse"));
    assert_eq!(alice[1].codec, Some(Codec::Binary));
    assert_eq!(&*alice[1].user, "alice");
}

#[test]
fn a_connection_identified_but_not_yet_welcomed_shows_without_a_session() {
    let (node, handles) = node_with(NodeConfig::default(), &["alice"]);
    let alice = node.sessions_of("alice");
    assert_eq!(alice.len(), 1);
    assert_eq!(alice[0].connection, handles[0]);
    assert_eq!(alice[0].session, None);
    assert_eq!(alice[0].transport, None);
}

#[test]
fn a_closed_connection_is_gone_from_the_list_and_a_late_welcome_is_ignored() {
    let (mut node, handles) = node_with(NodeConfig::default(), &["alice", "alice"]);
    node.handle_event(at(1), handles[0], NodeEvent::Closed);
    node.handle_event(
        at(2),
        handles[0],
        welcomed("late", "websocket", Codec::Json),
    );
    let alice = node.sessions_of("alice");
    assert_eq!(alice.len(), 1);
    assert_eq!(alice[0].connection, handles[1]);
    assert!(node.sessions_of("nobody").is_empty());
}
