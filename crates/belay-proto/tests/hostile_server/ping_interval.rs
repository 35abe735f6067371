//! A server's `ping_interval_ms` is clamped to [1 s, 120 s]: however large
//! the advertisement, the client's own probe still runs and a dead
//! connection is detected within a known bound.

use std::time::Duration;

use belay_proto::message::{ClientMessage, Welcome, PROTOCOL_VERSION};
use belay_proto::{DisconnectReason, Event, Input, MAX_SERVER_PING_MS};

use crate::common::{events, sent, Driver};

#[test]
fn a_huge_advertised_interval_cannot_switch_detection_off() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    d.welcome(
        id,
        Welcome {
            session: "s".into(),
            protocol: PROTOCOL_VERSION,
            ping_interval_ms: Some(1 << 53),
            pacing: None,
            expires_in_ms: None,
        },
    );
    let opened = d.now;
    // The server then says nothing at all.
    let mut probed = None;
    let mut dead = None;
    for _ in 0..100 {
        let out = d.next_timeout();
        if probed.is_none() && sent(&out).contains(&ClientMessage::Ping) {
            probed = Some(d.now - opened);
        }
        if events(&out).iter().any(|e| {
            matches!(
                e,
                Event::Disconnected {
                    reason: DisconnectReason::HeartbeatTimeout { .. },
                    ..
                }
            )
        }) {
            dead = Some(d.now - opened);
            break;
        }
    }
    let bound = Duration::from_millis(MAX_SERVER_PING_MS);
    let probed = probed.expect("the client probes a silent connection");
    assert!(probed <= bound * 3 / 2, "first probe after {probed:?}");
    let dead = dead.expect("a silent connection is declared dead");
    assert!(
        dead <= bound * 2 + Duration::from_secs(10),
        "dead after {dead:?}"
    );
}
