//! A frozen server is detected by the client's heartbeat, reaped by the
//! server's, and the client's reconnect recovers every publication it
//! missed.

use std::time::Duration;

use belay_proto::server::{Event as ServerEvent, Limits};
use belay_proto::testing::ServerRecord;
use belay_proto::{Config, DisconnectReason, Event, Instant};
use serde_json::json;

use crate::support::{count, offsets, ready_pair, C};

#[test]
fn a_frozen_server_is_noticed_reaped_and_recovered_without_loss() {
    let mut pair = ready_pair(Config::default(), 7, &["news"]);
    for n in 1..=3 {
        pair.publish("news", json!(n));
        pair.run_for(Duration::from_millis(100));
    }
    assert_eq!(offsets(&pair, C, "news"), [1, 2, 3]);

    // The server freezes: nothing gets through either way, new connections
    // included. The application keeps publishing.
    let frozen_at = pair.now();
    pair.client_mut(C).link.freeze();
    for n in 4..=6 {
        pair.publish("news", json!(n));
        pair.run_for(Duration::from_secs(1));
    }
    pair.run_for(Duration::from_secs(57));
    let detected = pair
        .events(C)
        .iter()
        .find_map(|(at, e)| match e {
            Event::Disconnected {
                reason: DisconnectReason::HeartbeatTimeout { .. },
                ..
            } => Some(*at),
            _ => None,
        })
        .expect("the client's heartbeat notices the freeze");
    // spec/PROTOCOL.md §3.3: with a server that pings every I, dead at
    // whichever comes first of max(probe_interval, 1.5 I) + probe_timeout
    // and 2 I after the last frame.
    let config = Config::default();
    let ping = Limits::default().ping_interval();
    let probed = config.probe_interval().max(ping.mul_f64(1.5)) + config.probe_timeout();
    let bound = probed.min(ping * 2);
    let detection = detected.saturating_duration_since(frozen_at);
    assert!(detection <= bound, "{detection:?} > {bound:?}");
    assert!(!pair.client(C).session.is_ready());
    // The server's own heartbeat reaps the frozen connection (4000).
    let reaped = pair.server_log().iter().any(|r| {
        matches!(
            r,
            ServerRecord::Event {
                event: ServerEvent::Reaped,
                ..
            }
        )
    });
    assert!(reaped, "{:?}", pair.server_log());

    // The freeze ends: the client reconnects, resumes from offset 3, and
    // gets 4..6 replayed, then 7 live.
    pair.client_mut(C).link.heal();
    pair.run_for(Duration::from_secs(75));
    assert!(pair.client(C).session.is_ready());
    pair.publish("news", json!(7));
    pair.run_for(Duration::from_secs(1));
    assert_eq!(offsets(&pair, C, "news"), [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(
        count(&pair, C, |e| matches!(e, Event::RecoveryFailed { .. })),
        0
    );
    let recovered = |e: &Event| {
        matches!(
            e,
            Event::Subscribed {
                recovered: true,
                ..
            }
        )
    };
    assert_eq!(count(&pair, C, recovered), 1);
    // One live transport at a time, one server connection left, one
    // subscriber in the broker; 120 s of protocol.
    assert_eq!(pair.client(C).max_open_transports, 1);
    assert_eq!(pair.server_connections(), 1);
    assert_eq!(pair.broker.subscribers(), 1);
    assert!(pair.now() >= Instant::ZERO + Duration::from_secs(120));
}
