//! A request whose frame would exceed the 1 MiB frame limit is refused at
//! once with a typed error and never put on the wire (the server would
//! close the connection for it).

use belay_proto::message::MAX_FRAME_LEN;
use belay_proto::{Call, RequestError};
use serde_json::json;

use crate::common::{sent, Driver};

#[test]
fn an_oversized_request_is_refused_unsent() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let big = "x".repeat(2 << 20);
    let refused = d.session.request(d.now, Call::new("echo", json!(big)));
    match refused {
        Err(RequestError::TooLarge { len, max }) => {
            assert!(len > 2 << 20);
            assert_eq!(max, MAX_FRAME_LEN);
        }
        other => panic!("refused as too large: {other:?}"),
    }
    assert!(sent(&d.drain()).is_empty(), "nothing was transmitted");
    assert_eq!(d.session.requests_in_flight(), 0);
    // The session is unharmed: a normal request goes out.
    d.session
        .request(d.now, Call::new("echo", json!("hi")))
        .unwrap();
    assert_eq!(sent(&d.drain()).len(), 1);
}

#[test]
fn a_request_just_under_the_limit_is_sent() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let fits = "x".repeat(MAX_FRAME_LEN - 200);
    d.session
        .request(d.now, Call::new("echo", json!(fits)))
        .unwrap();
    assert_eq!(sent(&d.drain()).len(), 1);
}
