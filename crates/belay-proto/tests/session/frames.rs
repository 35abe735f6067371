//! Frames the session cannot use: malformed or oversized ones close the
//! connection with the matching code; an unknown type is skipped but
//! proves the peer is alive.

use belay_proto::{CloseCode, Input, Instant};

use crate::common::{closes, retry_of, Driver};

#[test]
fn a_malformed_frame_closes_with_a_protocol_error_and_reconnects() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let out = d.input(Input::Frame(id, "{not json".into()));
    assert_eq!(closes(&out), vec![(id, CloseCode::PROTOCOL_ERROR)]);
    assert!(retry_of(&out).will_retry());
}

#[test]
fn an_unknown_message_type_is_skipped_but_proves_life() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(9_000);
    let out = d.input(Input::Frame(id, r#"{"type":"hologram"}"#.into()));
    assert!(out.is_empty());
    assert_eq!(d.session.stats().unknown_frames, 1);
    d.next_timeout();
    assert_eq!(
        d.now,
        Instant::from_millis(19_000),
        "the quiet timer restarted"
    );
}

#[test]
fn an_oversized_frame_closes_with_message_too_big() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let huge = format!(r#"{{"type":"ping","pad":"{}"}}"#, "x".repeat(1 << 20));
    let out = d.input(Input::Frame(id, huge));
    assert_eq!(closes(&out), vec![(id, CloseCode::TOO_BIG)]);
}
