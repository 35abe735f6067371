//! The node's `disconnect_user` closes that user's connections with 4003, a
//! final close: the client halts instead of reconnecting, and nobody else
//! is touched.

use std::time::Duration;

use belay_proto::testing::Pair;
use belay_proto::{Config, Event, HaltReason};

use crate::support::{server_closes, start};

#[test]
fn the_users_client_halts_with_the_reason_and_the_other_stays() {
    let mut pair = Pair::without_clients(Default::default(), 71);
    let alice = pair.add_client(Config::default(), 71);
    let bob = pair.add_client(Config::default(), 72);
    start(&mut pair, alice, &[]);
    start(&mut pair, bob, &[]);
    assert_eq!(pair.disconnect_user(alice, "banned"), 1);
    pair.run_for(Duration::from_secs(30));
    assert_eq!(server_closes(&pair), [4003]);
    let halted = pair.events(alice).iter().find_map(|(_, e)| match e {
        Event::Halted {
            reason: HaltReason::ServerClosed { close },
        } => Some(close.clone()),
        _ => None,
    });
    let close = halted.expect("halted");
    assert_eq!(close.reason, "disconnected: banned");
    assert_eq!(
        pair.server_connections_of(alice),
        0,
        "no reconnect after a final close"
    );
    assert!(pair.client(bob).session.is_ready());
    assert_eq!(pair.server_connections_of(bob), 1);
}
