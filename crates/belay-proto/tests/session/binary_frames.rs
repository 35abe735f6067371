//! Binary frames (a connection that negotiated the binary codec,
//! spec/PROTOCOL.md §1.8) go through the same rules as text frames: a
//! `welcome` opens the session, an unknown code is skipped but proves life,
//! a malformed frame closes 1002, an oversized one 1009.

use belay_proto::message::{encode_server_binary, ServerMessage};
use belay_proto::{CloseCode, Input, Instant};

use crate::common::{closes, retry_of, welcome, Driver};

#[test]
fn a_binary_welcome_opens_the_session() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.input(Input::TransportOpened(id));
    let frame = encode_server_binary(&ServerMessage::Welcome(welcome("s-bin")));
    d.input(Input::BinaryFrame(id, frame));
    assert!(d.session.is_ready());
}

#[test]
fn an_unknown_binary_code_is_skipped_but_proves_life() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    d.at(9_000);
    let out = d.input(Input::BinaryFrame(id, vec![0x12, 0x34, 0x01]));
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
fn a_cut_binary_frame_closes_with_a_protocol_error_and_reconnects() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    // `publication` whose channel length runs past the frame.
    let out = d.input(Input::BinaryFrame(id, vec![0x00, 0x24, 0x09, b'n']));
    assert_eq!(closes(&out), vec![(id, CloseCode::PROTOCOL_ERROR)]);
    assert!(retry_of(&out).will_retry());
}

#[test]
fn an_oversized_binary_frame_closes_with_message_too_big() {
    let mut d = Driver::fixed(1_000);
    let id = d.start();
    d.establish(id);
    let mut huge = vec![0x00, 0x03];
    huge.resize((1 << 20) + 1, 0);
    let out = d.input(Input::BinaryFrame(id, huge));
    assert_eq!(closes(&out), vec![(id, CloseCode::TOO_BIG)]);
}
