use std::time::Duration;

use serde_json::json;

use super::*;
use crate::message::{Payload, Reply, StreamPosition, Subscribed};

type Conn = Connection<&'static str>;

const T0: Instant = Instant::ZERO;

fn at(ms: u64) -> Instant {
    T0 + Duration::from_millis(ms)
}

fn drain(conn: &mut Conn) -> Vec<Output<&'static str>> {
    std::iter::from_fn(|| conn.poll_output()).collect()
}

/// What the client would receive and how the connection ends, without the
/// driver's questions and events.
fn sent(outputs: &[Output<&'static str>]) -> Vec<String> {
    outputs
        .iter()
        .filter_map(|o| match o {
            Output::Send(message) => Some(crate::message::encode_server(message)),
            Output::SendEncoded(frame) => Some(frame.to_string()),
            Output::Close { code, reason, .. } => Some(format!("close {} {reason}", code.0)),
            Output::PeerGone { code } => Some(format!("peer gone {code:?}")),
            _ => None,
        })
        .collect()
}

fn text(conn: &mut Conn, now: Instant, frame: serde_json::Value) {
    conn.handle_frame(now, Frame::Text(&frame.to_string()));
}

/// A connection through `welcome`, its outputs so far drained.
fn open() -> Conn {
    open_with(Limits::default())
}

/// The same under `limits`.
fn open_with(limits: Limits) -> Conn {
    let mut conn = Conn::new(limits, T0, 42);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    let Some(Output::Authenticate { ticket, .. }) = conn.poll_output() else {
        panic!("connect must be authenticated")
    };
    conn.handle_auth(T0, ticket, AuthVerdict::accepted());
    drain(&mut conn);
    conn
}

fn closed_with(outputs: &[Output<&'static str>]) -> Option<(u16, String)> {
    outputs.iter().find_map(|o| match o {
        Output::Close { code, reason, .. } => Some((code.0, reason.clone())),
        _ => None,
    })
}

fn ticket_of(outputs: &[Output<&'static str>]) -> Ticket {
    outputs
        .iter()
        .find_map(|o| match o {
            Output::Authenticate { ticket, .. }
            | Output::AuthorizeSubscribe { ticket, .. }
            | Output::AuthorizeRequest { ticket, .. }
            | Output::Join { ticket, .. }
            | Output::Call { ticket, .. } => Some(*ticket),
            _ => None,
        })
        .expect("a question")
}

/// Send request `id` for `method`, authorize it: the `Call`'s ticket.
fn called(conn: &mut Conn, id: u64, method: &str) -> Ticket {
    text(
        conn,
        T0,
        json!({"type": "request", "id": id, "method": method}),
    );
    let ask = ticket_of(&drain(conn));
    conn.handle_request_authorized(T0, ask, Ok(()));
    ticket_of(&drain(conn))
}

fn subscribe(conn: &mut Conn, now: Instant, channel: &str, subscription: u64, top: u64) {
    text(conn, now, json!({"type": "subscribe", "channel": channel}));
    let ask = ticket_of(&drain(conn));
    conn.handle_subscribe_authorized(now, ask, Ok(()));
    let join = ticket_of(&drain(conn));
    conn.handle_joined(now, join, joined(channel, subscription, top, vec![]));
    drain(conn);
}

fn joined(
    channel: &str,
    subscription: u64,
    offset: u64,
    replay: Vec<(u64, &'static str)>,
) -> JoinAnswer<&'static str> {
    JoinAnswer::Joined {
        subscribed: Subscribed {
            channel: channel.into(),
            epoch: "e".into(),
            offset,
            recovered: false,
        },
        subscription,
        replay,
    }
}

#[test]
fn connect_is_authenticated_then_welcomed_with_a_seeded_session_id() {
    let mut a = Conn::new(Limits::default(), T0, 42);
    a.set_upgrade_token(Some("header".into()));
    text(&mut a, T0, json!({"type": "connect", "protocol": 1}));
    let out = drain(&mut a);
    assert!(matches!(&out[..], [Output::Authenticate { token: Some(t), .. }] if t == "header"));
    a.handle_auth(T0, ticket_of(&out), AuthVerdict::accepted());
    let out = drain(&mut a);
    let Some(Output::Send(ServerMessage::Welcome(welcome))) = out.first() else {
        panic!("{out:?}")
    };
    assert_eq!(welcome.ping_interval_ms, Some(25_000));
    assert_eq!(a.phase(), Phase::Open);
    assert_eq!(a.session_id(), Some(welcome.session.as_str()));
    assert!(out.contains(&Output::Event(Event::Connected {
        session: welcome.session.as_str().into()
    })));
    // Same seed, same id; another seed, another id.
    assert_eq!(open().session_id(), open().session_id());
    let mut b = Conn::new(Limits::default(), T0, 43);
    text(&mut b, T0, json!({"type": "connect", "protocol": 1}));
    let t = ticket_of(&drain(&mut b));
    b.handle_auth(T0, t, AuthVerdict::accepted());
    assert_ne!(b.session_id(), open().session_id());
}

#[test]
fn the_connect_token_wins_over_the_upgrade_header() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    conn.set_upgrade_token(Some("header".into()));
    text(
        &mut conn,
        T0,
        json!({"type": "connect", "protocol": 1, "token": "own"}),
    );
    assert!(matches!(
        conn.poll_output(),
        Some(Output::Authenticate { token: Some(t), .. }) if t == "own"
    ));
}

#[test]
fn anything_but_connect_first_closes_1002() {
    for frame in [
        Frame::Text(r#"{"type":"ping"}"#),
        Frame::Text("not json"),
        Frame::Binary,
    ] {
        let mut conn = Conn::new(Limits::default(), T0, 1);
        conn.handle_frame(T0, frame);
        let out = drain(&mut conn);
        assert_eq!(closed_with(&out), Some((1002, "connect expected".into())));
        assert_eq!(conn.phase(), Phase::Closed);
    }
}

#[test]
fn another_protocol_version_closes_1008() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 9}));
    let out = drain(&mut conn);
    assert_eq!(closed_with(&out).map(|c| c.0), Some(1008));
}

#[test]
fn no_connect_within_the_handshake_timeout_closes_4008() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    let deadline = conn.poll_timeout().unwrap();
    assert_eq!(deadline, T0 + Limits::default().handshake_timeout());
    conn.handle_timeout(deadline - Duration::from_millis(1));
    assert!(drain(&mut conn).is_empty());
    conn.handle_timeout(deadline);
    assert_eq!(closed_with(&drain(&mut conn)).map(|c| c.0), Some(4008));
    assert_eq!(conn.poll_timeout(), None);
}

#[test]
fn an_authenticator_slower_than_the_handshake_timeout_closes_4008() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    let ticket = ticket_of(&drain(&mut conn));
    let deadline = conn.poll_timeout().unwrap();
    conn.handle_timeout(deadline);
    assert_eq!(closed_with(&drain(&mut conn)).map(|c| c.0), Some(4008));
    conn.handle_auth(deadline, ticket, AuthVerdict::accepted());
    assert!(
        drain(&mut conn).is_empty(),
        "a late verdict changes nothing"
    );
}

#[test]
fn a_refused_or_already_expired_credential_closes_4001() {
    for verdict in [
        AuthVerdict::Refused,
        AuthVerdict::Accepted {
            expires_at: Some(T0),
            pacing: None,
        },
    ] {
        let mut conn = Conn::new(Limits::default(), T0, 1);
        text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
        let ticket = ticket_of(&drain(&mut conn));
        conn.handle_auth(T0, ticket, verdict);
        assert_eq!(
            sent(&drain(&mut conn)),
            ["close 4001 unauthorized".to_owned()]
        );
    }
}

#[test]
fn a_credential_that_expires_closes_4001_at_the_next_message() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    let ticket = ticket_of(&drain(&mut conn));
    let verdict = AuthVerdict::Accepted {
        expires_at: Some(at(1_000)),
        pacing: None,
    };
    conn.handle_auth(T0, ticket, verdict);
    drain(&mut conn);
    text(
        &mut conn,
        at(1_000),
        json!({"type": "unsubscribe", "channel": "a"}),
    );
    assert_eq!(
        closed_with(&drain(&mut conn)),
        Some((4001, "credentials expired".into()))
    );
}

#[test]
fn messages_pipelined_after_connect_run_after_welcome() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    text(&mut conn, T0, json!({"type": "subscribe", "channel": "a"}));
    let out = drain(&mut conn);
    assert_eq!(out.len(), 1, "only the authentication is asked: {out:?}");
    conn.handle_auth(T0, ticket_of(&out), AuthVerdict::accepted());
    let out = drain(&mut conn);
    assert!(matches!(out[0], Output::Send(ServerMessage::Welcome(_))));
    assert!(out
        .iter()
        .any(|o| matches!(o, Output::AuthorizeSubscribe { channel, .. } if channel == "a")));
}

#[test]
fn a_second_connect_closes_1002() {
    let mut conn = open();
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    assert_eq!(
        closed_with(&drain(&mut conn)),
        Some((1002, "duplicate connect".into()))
    );
}

#[test]
fn a_request_is_authorized_called_and_answered_exactly_once() {
    let mut conn = open();
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 7, "method": "echo", "params": 1}),
    );
    let out = drain(&mut conn);
    assert!(matches!(&out[..], [Output::AuthorizeRequest { method, .. }] if method == "echo"));
    conn.handle_request_authorized(T0, ticket_of(&out), Ok(()));
    let out = drain(&mut conn);
    let Output::Call { ticket, request } = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!((request.id, &request.params), (7, &Payload::from(1)));
    assert_eq!(conn.requests_in_flight(), 1);
    let ticket = *ticket;
    conn.handle_reply(at(5), ticket, Reply::Result(RawJson::from_value(&json!(1))));
    conn.handle_reply(at(6), ticket, Reply::Result(RawJson::null()));
    assert_eq!(
        sent(&drain(&mut conn)),
        [r#"{"type":"response","id":7,"result":1}"#.to_owned()]
    );
    assert_eq!(conn.requests_in_flight(), 0);
}

use crate::message::RawJson;

#[test]
fn a_denied_request_gets_its_error_and_is_never_called() {
    let mut conn = open();
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 1, "method": "admin"}),
    );
    let ticket = ticket_of(&drain(&mut conn));
    conn.handle_request_authorized(T0, ticket, Err(ErrorBody::new("forbidden", "no")));
    let out = drain(&mut conn);
    assert!(!out.iter().any(|o| matches!(o, Output::Call { .. })));
    assert_eq!(
        sent(&out),
        [r#"{"type":"response","id":1,"error":{"code":"forbidden","message":"no"}}"#.to_owned()]
    );
}

#[test]
fn requests_beyond_the_in_flight_bound_are_refused_rate_limited() {
    let mut limits = Limits::default();
    limits.set_max_in_flight(2);
    let mut conn = open_with(limits);
    let mut out = Vec::new();
    for id in 1..=3 {
        text(
            &mut conn,
            T0,
            json!({"type": "request", "id": id, "method": "slow"}),
        );
        let ticket = ticket_of(&drain(&mut conn));
        conn.handle_request_authorized(T0, ticket, Ok(()));
        out = drain(&mut conn);
    }
    assert!(
        !out.iter().any(|o| matches!(o, Output::Call { .. })),
        "{out:?}"
    );
    assert_eq!(conn.requests_in_flight(), 2);
    assert!(sent(&out)[0].contains(r#""id":3,"error":{"code":"rate_limited""#));
}

#[test]
fn a_malformed_request_with_a_readable_id_gets_its_one_response() {
    let mut conn = open();
    text(
        &mut conn,
        T0,
        json!({"type": "request", "id": 9, "method": 5}),
    );
    let out = sent(&drain(&mut conn));
    assert!(out[0].starts_with(r#"{"type":"response","id":9,"error":{"code":"bad_request""#));
}

#[test]
fn unknown_types_and_binary_frames_are_answered_and_keep_the_connection() {
    let mut conn = open();
    text(&mut conn, T0, json!({"type": "frobnicate"}));
    conn.handle_frame(T0, Frame::Binary);
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
    conn.handle_frame(T0, Frame::Ping(b"abc"));
    assert_eq!(drain(&mut conn), [Output::Pong(b"abc".to_vec())]);
    let mut closed = false;
    for _ in 0..100_000 {
        conn.handle_frame(T0, Frame::Ping(b""));
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
    assert_eq!(probe_at, at(25_000));
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
    conn.handle_frame(at(20_000), Frame::Pong);
    assert_eq!(conn.poll_timeout(), Some(at(45_000)));
}

#[test]
fn subscribe_is_authorized_then_joined_then_confirmed_then_replayed() {
    let mut conn = open();
    let since = json!({"epoch": "e", "offset": 3});
    text(
        &mut conn,
        T0,
        json!({"type": "subscribe", "channel": "a", "since": since}),
    );
    let ask = ticket_of(&drain(&mut conn));
    conn.handle_subscribe_authorized(T0, ask, Ok(()));
    let out = drain(&mut conn);
    let Output::Join { ticket, since, .. } = &out[0] else {
        panic!("{out:?}")
    };
    assert_eq!(
        since,
        &Some(StreamPosition {
            epoch: "e".into(),
            offset: 3
        })
    );
    let replay = vec![(4, "pub 4"), (5, "pub 5")];
    conn.handle_joined(T0, *ticket, joined("a", 11, 3, replay));
    let out = drain(&mut conn);
    assert_eq!(
        sent(&out),
        [
            r#"{"type":"subscribed","channel":"a","epoch":"e","offset":3,"recovered":false}"#,
            "pub 4",
            "pub 5"
        ]
    );
    assert!(out.contains(&Output::Event(Event::Resumed { recovered: false })));
    // Live frames already replayed, or of another subscription, are dropped.
    conn.handle_live("a", 11, 5, "dup 5");
    conn.handle_live("a", 10, 6, "stale 6");
    conn.handle_live("a", 11, 6, "pub 6");
    assert_eq!(sent(&drain(&mut conn)), ["pub 6"]);
    assert_eq!(conn.subscription_count(), 1);
}

#[test]
fn a_denied_subscribe_is_answered_unsubscribed_and_never_joined() {
    let mut conn = open();
    text(
        &mut conn,
        T0,
        json!({"type": "subscribe", "channel": "secret"}),
    );
    let ask = ticket_of(&drain(&mut conn));
    conn.handle_subscribe_authorized(T0, ask, Err(ErrorBody::new("forbidden", "no")));
    let out = drain(&mut conn);
    assert!(!out.iter().any(|o| matches!(o, Output::Join { .. })));
    assert_eq!(
        sent(&out),
        [r#"{"type":"unsubscribed","channel":"secret","code":"forbidden","reason":"no"}"#]
    );
}

#[test]
fn invalid_names_and_limits_refuse_a_subscribe() {
    let mut limits = Limits::default();
    limits.set_max_subscriptions(1).set_max_channel_len(4);
    let mut conn = open_with(limits);
    text(
        &mut conn,
        T0,
        json!({"type": "subscribe", "channel": "toolong"}),
    );
    assert_eq!(
        sent(&drain(&mut conn)),
        [
            r#"{"type":"unsubscribed","channel":"tool","code":"bad_request","reason":"channel name too long"}"#
        ]
    );
    subscribe(&mut conn, T0, "a", 1, 0);
    text(&mut conn, T0, json!({"type": "subscribe", "channel": "b"}));
    let ask = ticket_of(&drain(&mut conn));
    conn.handle_subscribe_authorized(T0, ask, Ok(()));
    let out = drain(&mut conn);
    assert!(sent(&out)[0].contains(r#""code":"forbidden""#), "{out:?}");
    assert!(out.contains(&Output::Event(Event::SubscribeRefused)));
}

#[test]
fn a_broker_without_room_refuses_unavailable() {
    let mut conn = open();
    text(&mut conn, T0, json!({"type": "subscribe", "channel": "a"}));
    let ask = ticket_of(&drain(&mut conn));
    conn.handle_subscribe_authorized(T0, ask, Ok(()));
    let join = ticket_of(&drain(&mut conn));
    conn.handle_joined(T0, join, JoinAnswer::NoRoom);
    assert!(sent(&drain(&mut conn))[0].contains(r#""code":"unavailable""#));
    assert_eq!(conn.subscription_count(), 0);
}

#[test]
fn resubscribing_leaves_the_old_subscription_first() {
    let mut conn = open();
    subscribe(&mut conn, T0, "a", 1, 0);
    text(&mut conn, T0, json!({"type": "subscribe", "channel": "a"}));
    let out = drain(&mut conn);
    assert_eq!(
        out[0],
        Output::Leave {
            channel: "a".into(),
            subscription: 1
        }
    );
    text(
        &mut conn,
        T0,
        json!({"type": "unsubscribe", "channel": "a"}),
    );
    assert!(
        drain(&mut conn).is_empty(),
        "nothing held, nothing to leave"
    );
}

#[test]
fn a_join_answered_after_its_subscribe_was_replaced_is_left_again() {
    let mut conn = open();
    text(&mut conn, T0, json!({"type": "subscribe", "channel": "a"}));
    let ask = ticket_of(&drain(&mut conn));
    conn.handle_subscribe_authorized(T0, ask, Ok(()));
    let first = ticket_of(&drain(&mut conn));
    text(
        &mut conn,
        T0,
        json!({"type": "unsubscribe", "channel": "a"}),
    );
    conn.handle_joined(T0, first, joined("a", 5, 0, vec![]));
    assert_eq!(
        drain(&mut conn),
        [Output::Leave {
            channel: "a".into(),
            subscription: 5
        }]
    );
    assert_eq!(conn.subscription_count(), 0);
}

#[test]
fn a_lagging_subscription_is_ended_and_the_client_told() {
    let mut conn = open();
    subscribe(&mut conn, T0, "a", 3, 0);
    conn.handle_lagged("a", 2);
    assert!(drain(&mut conn).is_empty(), "a replaced subscription's lag");
    conn.handle_lagged("a", 3);
    let out = drain(&mut conn);
    assert!(out.contains(&Output::Leave {
        channel: "a".into(),
        subscription: 3
    }));
    assert_eq!(
        sent(&out),
        [
            r#"{"type":"unsubscribed","channel":"a","code":"lagged","reason":"subscriber fell behind"}"#
        ]
    );
}

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
    conn.handle_live("a", 1, 9, "late");
    conn.close(CloseCode::NORMAL, "again");
    assert!(drain(&mut conn).is_empty());
}

#[test]
fn the_peers_close_ends_the_connection() {
    let mut conn = open();
    subscribe(&mut conn, T0, "a", 1, 0);
    conn.handle_frame(T0, Frame::Close(Some(1000)));
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
    conn.handle_reply(at(100), call, Reply::Result(RawJson::null()));
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
    conn.handle_queue_full();
    let out = drain(&mut conn);
    assert!(out.contains(&Output::Close {
        code: CloseCode::SLOW_CONSUMER,
        reason: "slow consumer".into(),
        discard_unsent: true,
    }));
}

#[test]
fn a_lost_broker_ends_every_subscription_with_its_error() {
    let mut conn = open();
    subscribe(&mut conn, T0, "a", 1, 0);
    conn.unsubscribe_all(&ErrorBody::new("unavailable", "service down"));
    let out = drain(&mut conn);
    assert!(out.contains(&Output::Leave {
        channel: "a".into(),
        subscription: 1
    }));
    assert_eq!(
        sent(&out),
        [r#"{"type":"unsubscribed","channel":"a","code":"unavailable","reason":"service down"}"#]
    );
    assert_eq!(conn.subscription_count(), 0);
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
        conn.handle_transport_error(T0, error);
        let out = drain(&mut conn);
        assert_eq!(closed_with(&out).map(|c| c.0), want, "{error:?}");
        assert_eq!(conn.phase(), Phase::Closed);
    }
}

#[test]
fn more_messages_than_allowed_before_welcome_close_1002() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    drain(&mut conn);
    for _ in 0..MAX_BEFORE_WELCOME {
        text(
            &mut conn,
            T0,
            json!({"type": "unsubscribe", "channel": "a"}),
        );
    }
    assert!(drain(&mut conn).is_empty(), "held until the verdict");
    text(
        &mut conn,
        T0,
        json!({"type": "unsubscribe", "channel": "a"}),
    );
    assert_eq!(
        closed_with(&drain(&mut conn)),
        Some((1002, "connect expected".into()))
    );
}

#[test]
fn an_abandoned_call_frees_its_slot_and_gets_no_response() {
    let mut conn = open();
    let call = called(&mut conn, 1, "hung");
    assert_eq!(conn.requests_in_flight(), 1);
    conn.abandon_call(call);
    conn.handle_reply(T0, call, Reply::Result(RawJson::null()));
    assert_eq!(conn.requests_in_flight(), 0);
    assert!(sent(&drain(&mut conn)).is_empty());
}
