//! Leaving an advised transport: after `reconnect` advice the session sends
//! nothing new on the transport (requests are refused `NotReady`, never
//! sent), waits for the answers of requests already sent, then closes the
//! transport itself (1000) and reconnects within the advised window. So no
//! request is ever sent in the instant the server's close frame leaves.

use belay_proto::message::{Reply, Response};
use belay_proto::{
    Call, CloseCode, DisconnectReason, Event, RequestError, RequestOutcome, RetryPlan,
};
use serde_json::json;

use crate::common::{advice, closes, events, retry_of, Driver};

#[test]
fn with_nothing_in_flight_the_session_closes_the_transport_itself_at_once() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let out = d.server(id, advice("deploy", 3_000, 4_000));
    assert_eq!(closes(&out), [(id, CloseCode::NORMAL)]);
    assert!(events(&out).iter().any(|e| matches!(
        e,
        Event::Disconnected {
            reason: DisconnectReason::Advised,
            ..
        }
    )));
    let RetryPlan::After { delay } = retry_of(&out) else {
        panic!("retried")
    };
    assert!((3_000..4_000).contains(&(delay.as_millis() as u64)));
}

#[test]
fn the_session_waits_for_requests_in_flight_and_sends_no_new_one() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let sent = d
        .session
        .request(d.now, Call::new("m", json!(1)))
        .expect("sent");
    let out = d.server(id, advice("deploy", 3_000, 4_000));
    assert!(closes(&out).is_empty(), "a request is still in flight");
    assert!(!d.session.is_ready(), "not ready for new requests");
    assert_eq!(
        d.session.request(d.now, Call::new("m", json!(2))),
        Err(RequestError::NotReady),
        "refused, never sent"
    );
    let out = d.server(
        id,
        belay_proto::message::ServerMessage::Response(Response {
            id: sent.0,
            reply: Reply::Result(json!("done").into()),
        }),
    );
    let answered = events(&out).into_iter().any(
        |e| matches!(e, Event::Response { id, outcome: RequestOutcome::Ok { .. } } if id == sent),
    );
    assert!(answered, "the request in flight is answered first");
    assert_eq!(
        closes(&out),
        [(id, CloseCode::NORMAL)],
        "then the session leaves"
    );
}

#[test]
fn a_request_that_times_out_while_leaving_lets_the_session_leave() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.session
        .request(
            d.now,
            Call::new("m", json!(1)).with_timeout(std::time::Duration::from_secs(2)),
        )
        .expect("sent");
    d.server(id, advice("deploy", 3_000, 4_000));
    d.at(2_000);
    let out = d.tick();
    assert_eq!(closes(&out), [(id, CloseCode::NORMAL)]);
}
