//! A refresh keeps the user and the host, and only the grants' own
//! subscriptions are judged again.

use super::node_with;
use crate::server::node::{AccessRoute, Caller, Identity, NodeConfig};
use crate::server::{Access, ChannelOptions, Namespaces};

#[test]
fn a_refresh_must_name_the_same_user_and_host() {
    let (node, _) = node_with(NodeConfig::default(), &[]);
    let alice = Identity::new("alice", None);
    assert_eq!(node.check_refresh(alice, alice), Ok(()));
    assert!(node
        .check_refresh(alice, Identity::new("bob", None))
        .is_err());
    assert!(node
        .check_refresh(alice, Identity::new("alice", Some("pc-1")))
        .is_err());
    let host = Identity::new("alice", Some("pc-1"));
    assert!(node
        .check_refresh(host, Identity::new("alice", Some("pc-2")))
        .is_err());
    assert!(node.check_refresh(host, alice).is_err());
}

#[test]
fn channels_the_backend_or_a_token_judged_are_kept_and_the_rest_asked_again() {
    let mut config = NodeConfig::default();
    config.set_namespaces(
        Namespaces::new()
            .with(
                "b:*",
                ChannelOptions::default().with_subscribe(Access::Backend),
            )
            .with(
                "t:*",
                ChannelOptions::default().with_subscribe(Access::Token),
            ),
    );
    let (node, _) = node_with(config, &[]);
    let me = Caller::client();
    assert_eq!(node.regrant_route(me, "b:1"), None);
    assert_eq!(node.regrant_route(me, "t:1"), None);
    assert_eq!(
        node.regrant_route(me, "news"),
        Some(AccessRoute::Grant {
            channel: "news".into()
        })
    );
    // The state channel is judged as its host's data channel.
    assert_eq!(
        node.regrant_route(me, "$host-state:pc-1"),
        Some(AccessRoute::Grant {
            channel: "$host:pc-1".into()
        })
    );
}
