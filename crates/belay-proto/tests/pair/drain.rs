//! A drain closes 1012 only once the request in flight is answered; the
//! client gets its answer and reconnects.

use std::time::Duration;

use belay_proto::message::Payload;
use belay_proto::{Call, Config, RequestOutcome};

use crate::support::{accepted, outcome, ready_pair, server_closes, C};

#[test]
fn a_request_in_flight_is_answered_before_the_drain_closes_its_connection() {
    let mut pair = ready_pair(Config::default(), 51, &[]);
    let slow = Call::new("slow", Payload::from(1_000));
    let slow = pair.command(C, |s, now| s.request(now, slow)).unwrap();
    pair.run_for(Duration::from_millis(100));
    pair.drain_server(Duration::from_secs(10));
    pair.run_for(Duration::from_millis(500));
    assert!(server_closes(&pair).is_empty(), "waits for the request");
    pair.run_for(Duration::from_millis(600));
    assert!(matches!(
        outcome(&pair, C, slow),
        Some(RequestOutcome::Ok { .. })
    ));
    assert_eq!(server_closes(&pair), [1012]);
    pair.run_for(Duration::from_secs(10));
    assert!(pair.client(C).session.is_ready());
    assert_eq!(accepted(&pair), 2, "reconnected once");
}
