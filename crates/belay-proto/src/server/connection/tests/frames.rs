//! Frames and liveness: bad input, budgets, pings, the heartbeat, transport failures.

use super::*;

#[test]
fn unknown_types_and_binary_frames_are_answered_and_keep_the_connection() {
    let mut conn = open();
    text(&mut conn, T0, json!({"type": "frobnicate"}));
    conn.handle_input(T0, Input::Frame(Frame::Binary(b"\x00\x01")));
    let out = drain(&mut conn);
    assert_eq!(
        sent(&out),
        [
            r#"{"type":"error","code":"bad_request","message":"unknown message type"}"#,
            r#"{"type":"error","code":"bad_request","message":"binary frames are not supported"}"#,
        ]
    );
    assert_eq!(conn.phase(), Phase::Open);
}

#[test]
fn frames_over_the_budget_are_refused_and_a_flood_closes_4029() {
    let mut conn = open();
    let mut refused = 0;
    let mut closed = None;
    for i in 0..5_000 {
        text(
            &mut conn,
            T0,
            json!({"type": "request", "id": i, "method": "echo"}),
        );
        let out = drain(&mut conn);
        refused += sent(&out)
            .iter()
            .filter(|s| s.contains("rate_limited"))
            .count();
        if let Some(close) = closed_with(&out) {
            closed = Some((i, close));
            break;
        }
    }
    assert!(refused > 0, "refused before the flood closes");
    let (_, close) = closed.expect("a flood is closed");
    assert_eq!(close, (4029, "rate limited".into()));
}

#[test]
fn websocket_pings_are_answered_with_their_payload_within_the_liveness_budget() {
    let mut conn = open();
    conn.handle_input(T0, Input::Frame(Frame::Ping(b"abc")));
    assert_eq!(drain(&mut conn), [Output::Pong(b"abc".to_vec())]);
    let mut closed = false;
    for _ in 0..100_000 {
        conn.handle_input(T0, Input::Frame(Frame::Ping(b"")));
        if closed_with(&drain(&mut conn)).is_some_and(|c| c == (4029, "ping flood".into())) {
            closed = true;
            break;
        }
    }
    assert!(closed, "a ping flood is closed 4029");
}

#[test]
fn a_silent_peer_is_probed_then_reaped_4000_dropping_what_is_unsent() {
    let mut conn = open();
    let probe_at = conn.poll_timeout().unwrap();
    assert_eq!(probe_at, at(8_000));
    conn.handle_timeout(probe_at);
    let out = drain(&mut conn);
    assert_eq!(sent(&out), [r#"{"type":"ping"}"#.to_owned()]);
    assert!(out.contains(&Output::Event(Event::PingSent)));
    let reap_at = conn.poll_timeout().unwrap();
    conn.handle_timeout(reap_at);
    let out = drain(&mut conn);
    assert!(out.contains(&Output::Event(Event::Reaped)));
    assert!(out.contains(&Output::Close {
        code: CloseCode::HEARTBEAT_TIMEOUT,
        reason: "heartbeat timeout".into(),
        discard_unsent: true,
    }));
}

#[test]
fn any_frame_keeps_the_peer_alive() {
    let mut conn = open();
    conn.handle_input(at(5_000), Input::Frame(Frame::Pong));
    assert_eq!(conn.poll_timeout(), Some(at(13_000)));
}

#[test]
fn transport_failures_close_with_their_documented_codes() {
    for (error, want) in [
        (TransportError::TooLarge, Some(1009)),
        (TransportError::InvalidUtf8, Some(1007)),
        (TransportError::Protocol, Some(1002)),
        (TransportError::Gone, None),
    ] {
        let mut conn = open();
        conn.handle_input(T0, Input::TransportError(error));
        let out = drain(&mut conn);
        assert_eq!(closed_with(&out).map(|c| c.0), want, "{error:?}");
        assert_eq!(conn.phase(), Phase::Closed);
    }
}
