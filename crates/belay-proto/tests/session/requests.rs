//! Requests: refused before the handshake, settled by their response, by
//! their deadline or by a lost connection, with ids that never repeat.

use std::time::Duration;

use belay_proto::message::{encode_server, ClientMessage, Reply, Response, ServerMessage};
use belay_proto::{Call, CloseInfo, Event, Input, Instant, RequestError, RequestOutcome};
use serde_json::json;

use crate::common::{events, opened_id, sent, Driver};

#[test]
fn requests_before_the_handshake_are_refused_and_never_sent() {
    let mut d = Driver::fixed(1_000);
    assert_eq!(
        d.session.request(d.now, Call::new("m", json!(null))),
        Err(RequestError::NotReady)
    );
    let id = d.start();
    d.input(Input::TransportOpened(id));
    assert_eq!(
        d.session.request(d.now, Call::new("m", json!(null))),
        Err(RequestError::NotReady)
    );
    assert!(sent(&d.drain()).is_empty());
}

#[test]
fn a_request_settles_with_its_response() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let req = d
        .session
        .request(
            d.now,
            Call::new("sum", json!([1, 2])).with_idempotency_key("k-1"),
        )
        .unwrap();
    let out = d.drain();
    let ClientMessage::Request(wire) = &sent(&out)[0] else {
        panic!("a request is sent");
    };
    assert_eq!(wire.idem.as_deref(), Some("k-1"));
    assert_eq!(wire.id, req.0);
    let out = d.input(Input::Frame(
        id,
        encode_server(&ServerMessage::Response(Response {
            id: req.0,
            reply: Reply::Result(json!(3).into()),
        })),
    ));
    assert_eq!(
        events(&out),
        vec![Event::Response {
            id: req,
            outcome: RequestOutcome::Ok {
                result: json!(3).into()
            }
        }]
    );
}

#[test]
fn a_request_times_out_at_its_deadline_and_a_late_answer_is_ignored() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let req = d
        .session
        .request(
            d.now,
            Call::new("slow", json!(null)).with_timeout(Duration::from_secs(3)),
        )
        .unwrap();
    d.drain();
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(3_000));
    assert_eq!(
        events(&out),
        vec![Event::Response {
            id: req,
            outcome: RequestOutcome::Timeout
        }]
    );
    assert!(
        d.session.is_ready(),
        "slow replies are not a readiness failure"
    );
    let out = d.server(
        id,
        ServerMessage::Response(Response {
            id: req.0,
            reply: Reply::Result(json!(1).into()),
        }),
    );
    assert!(events(&out).is_empty());
    assert_eq!(d.session.late_responses(), 1);
}

#[test]
fn requests_in_flight_settle_when_the_connection_drops_and_ids_keep_growing() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let a = d.session.request(d.now, Call::new("a", json!(1))).unwrap();
    let b = d.session.request(d.now, Call::new("b", json!(2))).unwrap();
    d.drain();
    let out = d.input(Input::TransportClosed(id, CloseInfo::abnormal()));
    let settled: Vec<_> = events(&out)
        .into_iter()
        .filter_map(|e| match e {
            Event::Response { id, outcome } => Some((id, outcome)),
            _ => None,
        })
        .collect();
    assert_eq!(
        settled,
        vec![
            (a, RequestOutcome::ConnectionClosed),
            (b, RequestOutcome::ConnectionClosed)
        ]
    );
    let id = opened_id(&d.next_timeout());
    d.establish(id);
    let c = d.session.request(d.now, Call::new("c", json!(3))).unwrap();
    assert!(c > b, "ids are never reset on reconnect");
}
