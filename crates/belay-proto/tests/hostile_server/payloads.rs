//! Application data is not the core's to parse: a legal payload the core
//! could not represent (nested 200 deep, a number past `f64`) is delivered
//! as its text, and never closes the connection, so it cannot poison a
//! channel into a reconnect loop.

use belay_proto::message::{ClientMessage, StreamPosition};
use belay_proto::{Call, Event, Input, RequestOutcome};
use serde_json::json;

use crate::common::{closes, events, sent, Driver};

fn deep(depth: usize) -> String {
    format!("{}{}", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn a_publication_nested_200_deep_is_delivered_as_its_text() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.input(Input::Frame(
        id,
        r#"{"type":"subscribed","channel":"news","epoch":"e1","offset":0}"#.into(),
    ));
    let data = deep(200);
    let out = d.input(Input::Frame(
        id,
        format!(
            r#"{{"type":"publication","channel":"news","epoch":"e1","offset":1,"data":{data}}}"#
        ),
    ));
    assert!(closes(&out).is_empty(), "the connection stays: {out:?}");
    let delivered: Vec<String> = events(&out)
        .into_iter()
        .filter_map(|e| match e {
            Event::Publication(p) => Some(p.data.get().to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(delivered, [data]);
    assert_eq!(
        d.session.subscriptions().position("news"),
        Some(&StreamPosition {
            epoch: "e1".into(),
            offset: 1
        })
    );
}

#[test]
fn a_result_of_1e400_settles_its_request_with_the_text() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let request = d
        .session
        .request(d.now, Call::new("big", json!(null)))
        .unwrap();
    assert!(matches!(sent(&d.drain())[..], [ClientMessage::Request(_)]));
    let out = d.input(Input::Frame(
        id,
        format!(
            r#"{{"type":"response","id":{},"result":{{"n":1e400}}}}"#,
            request.0
        ),
    ));
    assert!(closes(&out).is_empty(), "the connection stays: {out:?}");
    let result = events(&out).into_iter().find_map(|e| match e {
        Event::Response {
            id,
            outcome: RequestOutcome::Ok { result },
        } if id == request => Some(result),
        _ => None,
    });
    assert_eq!(
        result.map(|r| r.get().to_owned()).as_deref(),
        Some(r#"{"n":1e400}"#)
    );
}

#[test]
fn malformed_json_inside_a_payload_is_still_a_protocol_error() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    let out = d.input(Input::Frame(
        id,
        r#"{"type":"publication","channel":"news","epoch":"e1","offset":1,"data":[1,}"#.into(),
    ));
    assert_eq!(
        closes(&out).len(),
        1,
        "not JSON: the frame cannot be trusted"
    );
}
