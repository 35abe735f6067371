//! Closing: leaves before the close, the peer's close, drains, overload, slow consumers.

use super::*;

#[test]
fn closing_leaves_every_subscription_then_closes_and_nothing_follows() {
    let mut conn = open();
    subscribe(&mut conn, T0, "a", 1, 0);
    subscribe(&mut conn, T0, "b", 2, 0);
    conn.close(CloseCode::GOING_AWAY, "bye");
    let out = drain(&mut conn);
    let leaves = out
        .iter()
        .filter(|o| matches!(o, Output::Leave { .. }))
        .count();
    assert_eq!(leaves, 2);
    assert!(matches!(out.last(), Some(Output::Close { code, .. }) if code.0 == 1001));
    text(&mut conn, T0, json!({"type": "subscribe", "channel": "c"}));
    conn.handle_input(
        T0,
        Input::Live {
            channel: "a",
            subscription: 1,
            offset: 9,
            frame: "late",
        },
    );
    conn.close(CloseCode::NORMAL, "again");
    assert!(drain(&mut conn).is_empty());
}

#[test]
fn the_peers_close_ends_the_connection() {
    let mut conn = open();
    subscribe(&mut conn, T0, "a", 1, 0);
    conn.handle_input(T0, Input::Frame(Frame::Close(Some(1000))));
    let out = drain(&mut conn);
    assert_eq!(sent(&out), ["peer gone Some(1000)"]);
    assert_eq!(conn.phase(), Phase::Closed);
}

#[test]
fn a_drain_closes_1012_once_the_requests_in_flight_are_answered() {
    let mut conn = open();
    let call = called(&mut conn, 1, "slow");
    conn.advise(ReconnectAdvice {
        reason: "restart".into(),
        min_delay_ms: 0,
        max_delay_ms: 1_000,
        message: None,
    });
    conn.drain(T0, at(10_000));
    assert_eq!(conn.phase(), Phase::Draining);
    // Nothing new starts while draining.
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 2, "method": "echo"}),
    );
    let out = drain(&mut conn);
    assert!(sent(&out)[0].starts_with(r#"{"type":"reconnect""#));
    assert_eq!(closed_with(&out), None);
    assert!(!out
        .iter()
        .any(|o| matches!(o, Output::AuthorizeRequest { .. })));
    conn.handle_input(
        at(100),
        Input::Reply {
            ticket: call,
            reply: Reply::Result(RawJson::null()),
        },
    );
    let out = sent(&drain(&mut conn));
    assert_eq!(out[0], r#"{"type":"response","id":1,"result":null}"#);
    assert_eq!(out[1], "close 1012 server restarting");
}

#[test]
fn a_drain_closes_1012_at_its_deadline_even_with_requests_running() {
    let mut conn = open();
    called(&mut conn, 1, "slow");
    conn.drain(T0, at(2_000));
    assert_eq!(conn.poll_timeout(), Some(at(2_000)));
    conn.handle_timeout(at(2_000));
    assert_eq!(
        closed_with(&drain(&mut conn)),
        Some((1012, "server restarting".into()))
    );
}

#[test]
fn over_capacity_a_browser_is_told_when_to_return_then_closed_1013() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    conn.refuse_overload(Duration::from_millis(250));
    let out = sent(&drain(&mut conn));
    assert!(
        out[0].contains(r#""min_delay_ms":250,"max_delay_ms":500"#),
        "{out:?}"
    );
    assert_eq!(out[1], "close 1013 over capacity; retry after 250 ms");
}

#[test]
fn a_full_outbound_queue_closes_4009_without_writing_what_waits() {
    let mut conn = open();
    conn.handle_input(T0, Input::QueueFull);
    let out = drain(&mut conn);
    assert!(out.contains(&Output::Close {
        code: CloseCode::SLOW_CONSUMER,
        reason: "slow consumer".into(),
        discard_unsent: true,
    }));
}
