//! A frozen server is detected by the client's heartbeat, reaped by the
//! server's, and the client's reconnect recovers every publication it
//! missed: client core and server core together, in virtual time.

use std::time::{Duration, Instant as WallClock};

use belay_proto::server::{Event as ServerEvent, Limits};
use belay_proto::{Config, DisconnectReason, Event, Instant};
use belay_test_support::{Pair, ServerRecord};
use serde_json::json;

fn offsets(pair: &Pair) -> Vec<u64> {
    pair.events
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Publication(p) if p.channel == "news" => Some(p.offset),
            _ => None,
        })
        .collect()
}

#[test]
fn freeze_detect_reconnect_and_recover_without_loss() {
    let wall = WallClock::now();
    let mut pair = Pair::new(Config::default(), 7);
    pair.client.start(pair.now()).unwrap();
    pair.client.subscribe(pair.now(), "news").unwrap();
    pair.run_for(Duration::from_secs(1));
    assert!(pair.client.is_ready());
    for n in 1..=3 {
        pair.publish("news", json!(n));
        pair.run_for(Duration::from_millis(100));
    }
    assert_eq!(offsets(&pair), [1, 2, 3]);

    // The server freezes: nothing gets through either way, new connections
    // included. The application keeps publishing.
    let frozen_at = pair.now();
    pair.link.freeze();
    for n in 4..=6 {
        pair.publish("news", json!(n));
        pair.run_for(Duration::from_secs(1));
    }
    pair.run_for(Duration::from_secs(57));
    let detected = pair
        .events
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
    assert!(!pair.client.is_ready());
    // The server's own heartbeat reaps the frozen connection (4000).
    let reaped = pair.server_log.iter().any(|r| {
        matches!(
            r,
            ServerRecord::Event {
                event: ServerEvent::Reaped,
                ..
            }
        )
    });
    assert!(reaped, "{:?}", pair.server_log);

    // The freeze ends: the client reconnects, resumes from offset 3, and
    // gets 4..6 replayed, then 7 live.
    pair.link.heal();
    pair.run_for(Duration::from_secs(75));
    assert!(pair.client.is_ready());
    pair.publish("news", json!(7));
    pair.run_for(Duration::from_secs(1));
    assert_eq!(offsets(&pair), [1, 2, 3, 4, 5, 6, 7]);
    assert!(!pair
        .events
        .iter()
        .any(|(_, e)| matches!(e, Event::RecoveryFailed { .. })));
    assert!(pair.events.iter().any(|(_, e)| matches!(
        e,
        Event::Subscribed {
            recovered: true,
            ..
        }
    )));
    // One live transport at a time, one server connection left, one
    // subscriber in the broker.
    assert_eq!(pair.max_open_transports, 1);
    assert_eq!(pair.server_connections(), 1);
    assert_eq!(pair.broker.subscribers(), 1);
    assert!(pair.now() >= Instant::ZERO + Duration::from_secs(120));
    // 120 s of protocol; generous bound on the wall time (it is
    // milliseconds), only to catch a pair that stopped jumping.
    assert!(
        wall.elapsed() < Duration::from_secs(30),
        "{:?}",
        wall.elapsed()
    );
}
