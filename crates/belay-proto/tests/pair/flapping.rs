//! A server that drops every session 300 ms after it opened (no close
//! frame) while publications flow every 50 ms: the client reconnects again
//! and again and still gets every offset exactly once, in order — the
//! history covers every gap, so none is even announced.

use std::time::Duration;

use belay_proto::{Config, Event};
use serde_json::json;

use crate::support::{accepted, count, offsets, ready_pair, C};

const TICK: Duration = Duration::from_millis(50);

#[test]
fn flapping_sessions_lose_no_publication_and_deliver_none_twice() {
    let mut pair = ready_pair(Config::default(), 91, &["feed"]);
    let mut ready_for = Duration::ZERO;
    let mut last = 0;
    // 3 s of flapping, then 1 s more of publications.
    for tick in 0..80 {
        let flapping = tick < 60;
        if pair.client(C).session.is_ready() {
            ready_for += TICK;
        } else {
            ready_for = Duration::ZERO;
        }
        if flapping && ready_for >= Duration::from_millis(300) {
            pair.drop_server_connections();
            ready_for = Duration::ZERO;
        }
        last = pair.publish("feed", json!(tick));
        pair.run_for(TICK);
    }
    pair.run_for(Duration::from_secs(30));
    assert!(pair.client(C).session.is_ready());
    // A last publication shows the stream is live again.
    last = last.max(pair.publish("feed", json!("end")));
    pair.run_for(Duration::from_secs(1));

    let expected: Vec<u64> = (1..=last).collect();
    assert_eq!(offsets(&pair, C, "feed"), expected);
    let gaps = count(&pair, C, |e| matches!(e, Event::RecoveryFailed { .. }));
    assert_eq!(gaps, 0);
    let sessions = accepted(&pair);
    assert!(sessions >= 3, "it flapped: {sessions} sessions");
    assert_eq!(pair.server_connections(), 1);
}
