//! A restart settles the requests in flight (`ConnectionClosed`) and the
//! client is ready again within its backoff.

use std::time::Duration;

use belay_proto::message::Payload;
use belay_proto::{Call, CloseCode, Config, RequestOutcome};
use serde_json::json;

use crate::support::{outcome, ready_pair, C};

#[test]
fn a_restart_settles_requests_in_flight_and_the_client_is_ready_again() {
    let mut pair = ready_pair(Config::default(), 3, &[]);
    let slow = Call::new("slow", Payload::from(5_000));
    let slow = pair.command(C, |s, now| s.request(now, slow)).unwrap();
    let echo = Call::new("echo", json!(1));
    let echo = pair.command(C, |s, now| s.request(now, echo)).unwrap();
    pair.run_for(Duration::from_millis(100));
    assert!(matches!(
        outcome(&pair, C, echo),
        Some(RequestOutcome::Ok { .. })
    ));

    pair.close_server_connections(CloseCode::GOING_AWAY, "restarting");
    pair.client_mut(C).link.refusing = true;
    pair.run_for(Duration::from_millis(100));
    assert_eq!(
        outcome(&pair, C, slow),
        Some(RequestOutcome::ConnectionClosed)
    );
    assert!(!pair.client(C).session.is_ready());

    // The server accepts again after 1 s; the backoff's first steps are
    // short, so the client is back well within 4 s.
    pair.run_for(Duration::from_millis(900));
    pair.client_mut(C).link.heal();
    pair.run_for(Duration::from_secs(4));
    assert!(pair.client(C).session.is_ready());
    let again = Call::new("echo", json!(2));
    let again = pair.command(C, |s, now| s.request(now, again)).unwrap();
    pair.run_for(Duration::from_millis(100));
    assert!(matches!(
        outcome(&pair, C, again),
        Some(RequestOutcome::Ok { .. })
    ));
    assert_eq!(pair.server_connections(), 1);
}
