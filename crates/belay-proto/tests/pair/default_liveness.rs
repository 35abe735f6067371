//! At the defaults (`Limits::default`, `Config::default`) a silent death is
//! noticed within 16 s at both ends, the bound the README and
//! docs/SERVER.md state: a client whose server went silent gives up on it,
//! and a server whose client went silent reaps it.

use std::time::Duration;

use belay_proto::server::Event as ServerEvent;
use belay_proto::testing::ServerRecord;
use belay_proto::{Config, DisconnectReason, Event};

use crate::support::{ready_pair, C};

/// The bound the documentation states for the defaults.
const STATED_BOUND: Duration = Duration::from_secs(16);

#[test]
fn a_client_notices_a_silent_server_within_16_s() {
    let mut pair = ready_pair(Config::default(), 83, &["news"]);
    // Quiet for a while first: the worst case starts right after a ping.
    pair.run_for(Duration::from_secs(30));
    let silent_from = pair.now();
    pair.client_mut(C).link.freeze();
    pair.run_for(STATED_BOUND + Duration::from_secs(5));
    let noticed = pair
        .events(C)
        .iter()
        .find_map(|(at, e)| match e {
            Event::Disconnected {
                reason: DisconnectReason::HeartbeatTimeout { .. },
                ..
            } if *at >= silent_from => Some(*at),
            _ => None,
        })
        .expect("the client gives up on the silent server");
    let took = noticed.saturating_duration_since(silent_from);
    assert!(took <= STATED_BOUND, "noticed after {took:?}");
}

#[test]
fn a_server_reaps_a_silent_client_within_16_s() {
    let mut pair = ready_pair(Config::default(), 84, &["news"]);
    pair.run_for(Duration::from_secs(30));
    let silent_from = pair.now();
    pair.client_mut(C).link.up_frozen = true;
    pair.run_for(STATED_BOUND + Duration::from_secs(5));
    let reaped = pair
        .server_log()
        .iter()
        .find_map(|r| match r {
            ServerRecord::Event {
                at,
                event: ServerEvent::Reaped,
                ..
            } if *at >= silent_from => Some(*at),
            _ => None,
        })
        .expect("the server reaps the silent client");
    let took = reaped.saturating_duration_since(silent_from);
    assert!(took <= STATED_BOUND, "reaped after {took:?}");
}
