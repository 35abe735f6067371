//! A subscription is a presence member under one key per subscription,
//! announced only where the namespace says so.

use super::node_with;
use crate::server::node::{NodeConfig, PresenceChange};
use crate::server::{ChannelOptions, Namespaces};

fn config() -> NodeConfig {
    let mut config = NodeConfig::default();
    config.set_namespaces(
        Namespaces::new()
            .with(
                "room:*",
                ChannelOptions::default()
                    .with_presence(true)
                    .with_join_leave(true),
            )
            .with("quiet:*", ChannelOptions::default().with_presence(true)),
    );
    config
}

#[test]
fn a_member_is_keyed_by_session_and_subscription_and_announced_on_the_presence_channel() {
    let (node, _) = node_with(config(), &[]);
    assert_eq!(
        node.presence_change("room:1", "s-1", 7),
        Some(PresenceChange {
            key: "s-1/7".into(),
            announce_on: Some("$presence:room:1".into()),
        })
    );
}

#[test]
fn a_namespace_without_join_leave_keeps_members_silently() {
    let (node, _) = node_with(config(), &[]);
    let change = node.presence_change("quiet:1", "s-1", 1).unwrap();
    assert_eq!(change.announce_on, None);
}

#[test]
fn a_channel_without_presence_changes_nothing() {
    let (node, _) = node_with(config(), &[]);
    assert_eq!(node.presence_change("news", "s-1", 1), None);
    assert!(!node.tracks_presence("news"));
    assert!(node.tracks_presence("room:2"));
}
