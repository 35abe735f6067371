//! Who decides a subscribe or a client publish: the fixed rules of user,
//! presence, host and server channels first, then the namespace.

use super::node_with;
use crate::server::node::{AccessRoute, Caller, Node, NodeConfig};
use crate::server::{Access, ChannelOptions, Namespaces};

fn node(namespaces: Namespaces) -> Node {
    let mut config = NodeConfig::default();
    config.set_namespaces(namespaces);
    node_with(config, &[]).0
}

fn grant(channel: &str) -> AccessRoute {
    AccessRoute::Grant {
        channel: channel.into(),
    }
}

fn refused(route: &AccessRoute) -> bool {
    matches!(route, AccessRoute::Refused { .. })
}

#[test]
fn each_namespace_access_names_its_hook() {
    let node = node(
        Namespaces::new()
            .with(
                "open:*",
                ChannelOptions::default().with_subscribe(Access::Anyone),
            )
            .with(
                "closed:*",
                ChannelOptions::default().with_subscribe(Access::Nobody),
            )
            .with(
                "backend:*",
                ChannelOptions::default().with_subscribe(Access::Backend),
            )
            .with(
                "token:*",
                ChannelOptions::default().with_subscribe(Access::Token),
            ),
    );
    let me = Caller::client();
    assert_eq!(node.subscribe_access(me, "open:1"), AccessRoute::Allowed);
    assert!(refused(&node.subscribe_access(me, "closed:1")));
    assert_eq!(
        node.subscribe_access(me, "backend:1"),
        AccessRoute::Backend {
            channel: "backend:1".into()
        }
    );
    assert_eq!(
        node.subscribe_access(me, "token:1"),
        AccessRoute::SubscriptionToken {
            channel: "token:1".into()
        }
    );
    assert_eq!(node.subscribe_access(me, "other"), grant("other"));
}

#[test]
fn a_user_channel_is_its_users_whatever_the_namespace_says() {
    let node = node(
        Namespaces::new().with_defaults(
            ChannelOptions::default()
                .with_subscribe(Access::Anyone)
                .with_publish(Access::Anyone),
        ),
    );
    assert_eq!(
        node.subscribe_access(Caller::client(), "#alice"),
        grant("#alice")
    );
    // Publishing needs a rule that covers the user channel: the defaults do not.
    assert!(refused(&node.publish_access(Caller::client(), "#alice")));
}

#[test]
fn a_presence_channel_is_read_as_its_channel() {
    let node = node(Namespaces::new().with(
        "room:*",
        ChannelOptions::default().with_subscribe(Access::Backend),
    ));
    assert_eq!(
        node.subscribe_access(Caller::client(), "$presence:room:1"),
        AccessRoute::Backend {
            channel: "room:1".into()
        }
    );
}

#[test]
fn only_the_host_holds_its_calls_and_publishes_its_data() {
    let node = node(Namespaces::new());
    assert_eq!(
        node.subscribe_access(Caller::host("pc-1"), "$host-calls:pc-1"),
        AccessRoute::Allowed
    );
    assert!(refused(
        &node.subscribe_access(Caller::host("pc-2"), "$host-calls:pc-1")
    ));
    assert!(refused(
        &node.subscribe_access(Caller::client(), "$host-calls:pc-1")
    ));
    assert_eq!(
        node.publish_access(Caller::host("pc-1"), "$host:pc-1"),
        AccessRoute::Allowed
    );
    assert!(refused(
        &node.publish_access(Caller::client(), "$host:pc-1")
    ));
    // The state channel is read as the data channel, and never published.
    assert_eq!(
        node.subscribe_access(Caller::client(), "$host-state:pc-1"),
        grant("$host:pc-1")
    );
    assert!(refused(
        &node.publish_access(Caller::host("pc-1"), "$host-state:pc-1")
    ));
}

#[test]
fn no_client_publishes_to_a_server_channel_or_a_token_namespace() {
    let node = node(
        Namespaces::new()
            .with_defaults(ChannelOptions::default().with_publish(Access::Anyone))
            .with(
                "token:*",
                ChannelOptions::default().with_publish(Access::Token),
            )
            .with(
                "backend:*",
                ChannelOptions::default().with_publish(Access::Backend),
            ),
    );
    assert!(refused(
        &node.publish_access(Caller::client(), "$presence:x")
    ));
    assert!(refused(&node.publish_access(Caller::client(), "$anything")));
    assert!(refused(&node.publish_access(Caller::client(), "token:1")));
    assert_eq!(
        node.publish_access(Caller::client(), "backend:1"),
        AccessRoute::Backend {
            channel: "backend:1".into()
        }
    );
    assert_eq!(
        node.publish_access(Caller::client(), "news"),
        AccessRoute::Allowed
    );
}
