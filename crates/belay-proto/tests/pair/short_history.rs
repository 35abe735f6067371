//! A resume the history no longer covers: the client is told
//! (`RecoveryFailed`), nothing is delivered twice or out of order, and the
//! live stream continues.

use std::time::Duration;

use belay_proto::testing::{ModelBroker, Pair};
use belay_proto::{CloseCode, Config, Event};
use serde_json::json;

use crate::support::{count, offsets, start, C};

#[test]
fn a_resume_past_the_history_announces_the_gap_and_live_publications_follow() {
    let mut pair = Pair::new(Config::default(), 21);
    // Three publications of history per channel.
    pair.broker = ModelBroker::new(3, Duration::from_secs(300));
    start(&mut pair, C, &["news"]);
    for n in 1..=2 {
        pair.publish("news", json!(n));
    }
    pair.run_for(Duration::from_millis(100));
    assert_eq!(offsets(&pair, C, "news"), [1, 2]);

    pair.close_server_connections(CloseCode::GOING_AWAY, "restarting");
    pair.client_mut(C).link.refusing = true;
    for n in 3..=10 {
        pair.publish("news", json!(n));
    }
    pair.run_for(Duration::from_millis(500));
    pair.client_mut(C).link.heal();
    pair.run_for(Duration::from_secs(10));
    assert!(pair.client(C).session.is_ready());
    pair.publish("news", json!(11));
    pair.run_for(Duration::from_millis(100));

    let gaps = count(&pair, C, |e| matches!(e, Event::RecoveryFailed { .. }));
    assert_eq!(gaps, 1, "the gap is announced once");
    let seen = offsets(&pair, C, "news");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert!(!seen.contains(&3), "3 was lost with the history: {seen:?}");
    assert_eq!(seen.last(), Some(&11), "{seen:?}");
}
