//! A server restart (every connection closed, new ones refused for 700 ms)
//! while publications flow every 50 ms: the client reconnects, resumes, and
//! gets every offset exactly once, in order, with no gap announced.

use std::time::Duration;

use belay_proto::{CloseCode, Config, Event};
use serde_json::json;

use crate::support::{accepted, count, offsets, ready_pair, C};

#[test]
fn a_restart_loses_no_publication_and_delivers_none_twice() {
    let mut pair = ready_pair(Config::default(), 11, &["ticks"]);
    let mut last = 0;
    for n in 0..80u64 {
        if n == 20 {
            pair.close_server_connections(CloseCode::GOING_AWAY, "restarting");
            pair.client_mut(C).link.refusing = true;
        }
        if n == 34 {
            // 700 ms later the server accepts again.
            pair.client_mut(C).link.heal();
        }
        last = pair.publish("ticks", json!(n));
        pair.run_for(Duration::from_millis(50));
    }
    pair.run_for(Duration::from_secs(10));
    assert!(pair.client(C).session.is_ready());
    let expected: Vec<u64> = (1..=last).collect();
    assert_eq!(offsets(&pair, C, "ticks"), expected);
    let gaps = count(&pair, C, |e| matches!(e, Event::RecoveryFailed { .. }));
    assert_eq!(gaps, 0, "the history covers a 700 ms restart");
    assert!(accepted(&pair) >= 2, "it did reconnect");
    assert_eq!(pair.server_connections(), 1);
}
