//! Several clients on one server: each gets every publication once, in
//! order; one client's frozen link does not hold the others back, and once
//! it heals that client reconnects and recovers what it missed.

use std::time::Duration;

use belay_proto::testing::{ClientId, Pair};
use belay_proto::Config;
use serde_json::json;

use crate::support::{offsets, start};

#[test]
fn every_client_gets_every_publication_and_a_frozen_one_catches_up() {
    let mut pair = Pair::new(Config::default(), 61);
    let clients: Vec<ClientId> = std::iter::once(ClientId::FIRST)
        .chain((1..3).map(|n| pair.add_client(Config::default(), 61 + n)))
        .collect();
    for client in &clients {
        start(&mut pair, *client, &["news"]);
    }
    assert_eq!(pair.server_connections(), 3);
    let frozen = clients[2];
    for n in 1..=20u64 {
        if n == 6 {
            pair.client_mut(frozen).link.freeze();
        }
        pair.publish("news", json!(n));
        pair.run_for(Duration::from_millis(200));
    }
    let all: Vec<u64> = (1..=20).collect();
    for client in &clients[..2] {
        assert_eq!(offsets(&pair, *client, "news"), all, "{client}");
    }
    assert_eq!(offsets(&pair, frozen, "news"), [1, 2, 3, 4, 5]);

    // Long enough for both heartbeats to give up on the frozen connection.
    pair.run_for(Duration::from_secs(60));
    pair.client_mut(frozen).link.heal();
    pair.run_for(Duration::from_secs(90));
    pair.publish("news", json!(21));
    pair.run_for(Duration::from_secs(1));
    let all: Vec<u64> = (1..=21).collect();
    for client in &clients {
        assert_eq!(offsets(&pair, *client, "news"), all, "{client}");
        assert_eq!(pair.server_connections_of(*client), 1, "{client}");
    }
}
