//! Replies slower than a request's timeout settle each request with
//! `Timeout` at its own deadline, while the connection stays ready; a
//! method the server does not have is a typed server error.

use std::time::Duration;

use belay_proto::message::Payload;
use belay_proto::{Call, Config, RequestOutcome};

use crate::support::{count, is_disconnect, outcome, ready_pair, C};

#[test]
fn slow_replies_time_out_individually_while_the_session_stays_ready() {
    let mut pair = ready_pair(Config::default(), 5, &[]);
    let asked = pair.now();
    let ids: Vec<_> = (0..5)
        .map(|_| {
            let call =
                Call::new("slow", Payload::from(2_000)).with_timeout(Duration::from_millis(300));
            pair.command(C, |s, now| s.request(now, call)).unwrap()
        })
        .collect();
    pair.run_for(Duration::from_millis(299));
    assert!(ids.iter().all(|id| outcome(&pair, C, *id).is_none()));
    pair.run_for(Duration::from_millis(1));
    for id in &ids {
        assert_eq!(outcome(&pair, C, *id), Some(RequestOutcome::Timeout));
    }
    assert_eq!(
        pair.now().saturating_duration_since(asked),
        Duration::from_millis(300)
    );
    assert!(pair.client(C).session.is_ready(), "the session stays ready");

    // The late replies arrive and are dropped; a missing method is typed.
    pair.run_for(Duration::from_secs(2));
    let missing = Call::new("no.such.method", Payload::Null);
    let missing = pair.command(C, |s, now| s.request(now, missing)).unwrap();
    pair.run_for(Duration::from_millis(100));
    let settled = outcome(&pair, C, missing);
    assert!(
        matches!(settled, Some(RequestOutcome::ServerError { .. })),
        "{settled:?}"
    );
    assert_eq!(count(&pair, C, is_disconnect), 0, "no disconnect");
    assert_eq!(pair.client(C).session.late_responses(), 5);
}
