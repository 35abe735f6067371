//! Presence as the server's node decides it: one member per subscription,
//! its join and leave announced on `$presence:CHANNEL` in order, and a
//! connection that ends leaves every channel it was present in.

use std::time::Duration;

use belay_proto::server::{ChannelOptions, Namespaces, NodeConfig};
use belay_proto::testing::{ClientId, Pair};
use belay_proto::{Config, Event};

use crate::support::start;

fn pair() -> (Pair, ClientId, ClientId) {
    let mut pair = Pair::without_clients(Default::default(), 81);
    let mut config = NodeConfig::default();
    config.set_namespaces(
        Namespaces::new().with(
            "room:*",
            ChannelOptions::default()
                .with_presence(true)
                .with_join_leave(true),
        ),
    );
    pair.set_node_config(config);
    let watcher = pair.add_client(Config::default(), 81);
    let member = pair.add_client(Config::default(), 82);
    start(&mut pair, watcher, &["$presence:room:1"]);
    (pair, watcher, member)
}

/// The announcements the watcher saw: ("join" | "leave", user).
fn announcements(pair: &Pair, watcher: ClientId) -> Vec<(String, String)> {
    pair.events(watcher)
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Publication(p) if p.channel == "$presence:room:1" => {
                let data: serde_json::Value = serde_json::from_str(p.data.get()).ok()?;
                let (kind, member) = data.as_object()?.iter().next()?;
                Some((kind.clone(), member["user"].as_str()?.to_owned()))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_subscription_joins_and_its_unsubscribe_leaves_in_order() {
    let (mut pair, watcher, member) = pair();
    start(&mut pair, member, &["room:1"]);
    assert_eq!(pair.presence("room:1"), [member.user()]);
    pair.command(member, |s, now| s.unsubscribe(now, "room:1"))
        .unwrap();
    pair.run_for(Duration::from_secs(1));
    assert!(pair.presence("room:1").is_empty());
    assert_eq!(
        announcements(&pair, watcher),
        [
            ("join".into(), member.user()),
            ("leave".into(), member.user())
        ]
    );
}

#[test]
fn a_connection_that_ends_leaves_and_its_resubscribe_joins_again() {
    let (mut pair, watcher, member) = pair();
    start(&mut pair, member, &["room:1"]);
    // Every socket drops; both clients come back and resubscribe.
    pair.drop_server_connections();
    pair.run_for(Duration::from_secs(10));
    assert!(pair.client(member).session.is_ready());
    assert_eq!(pair.presence("room:1"), [member.user()], "one member again");
    let seen = announcements(&pair, watcher);
    let member_kinds: Vec<&str> = seen.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(member_kinds, ["join", "leave", "join"], "{seen:?}");
}
