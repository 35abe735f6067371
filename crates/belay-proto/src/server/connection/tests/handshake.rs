//! The handshake: `connect` first and once, the version, the verdict and expiry of the credential, `welcome`.

use super::*;

#[test]
fn connect_is_authenticated_then_welcomed_with_a_seeded_session_id() {
    let mut a = Conn::new(Limits::default(), T0, 42);
    a.set_upgrade_token(Some("header".into()));
    text(&mut a, T0, json!({"type": "connect", "protocol": 1}));
    let out = drain(&mut a);
    assert!(matches!(&out[..], [Output::Authenticate { token: Some(t), .. }] if t == "header"));
    a.handle_input(
        T0,
        Input::Auth {
            ticket: ticket_of(&out),
            verdict: AuthVerdict::accepted(),
        },
    );
    let out = drain(&mut a);
    let Some(Output::Send(ServerMessage::Welcome(welcome))) = out.first() else {
        panic!("{out:?}")
    };
    assert_eq!(welcome.ping_interval_ms, Some(8_000));
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
    b.handle_input(
        T0,
        Input::Auth {
            ticket: t,
            verdict: AuthVerdict::accepted(),
        },
    );
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
        Frame::Binary(b"\x00\x01"),
    ] {
        let mut conn = Conn::new(Limits::default(), T0, 1);
        conn.handle_input(T0, Input::Frame(frame));
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
    conn.handle_input(
        deadline,
        Input::Auth {
            ticket,
            verdict: AuthVerdict::accepted(),
        },
    );
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
        conn.handle_input(T0, Input::Auth { ticket, verdict });
        assert_eq!(
            sent(&drain(&mut conn)),
            ["close 4001 unauthorized".to_owned()]
        );
    }
}

#[test]
fn a_refusal_with_a_reason_closes_4001_with_that_reason() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    let ticket = ticket_of(&drain(&mut conn));
    conn.handle_input(
        T0,
        Input::Auth {
            ticket,
            verdict: AuthVerdict::RefusedFor {
                reason: "token expired".into(),
            },
        },
    );
    assert_eq!(
        sent(&drain(&mut conn)),
        ["close 4001 unauthorized: token expired".to_owned()]
    );
}

#[test]
fn a_credential_nobody_could_judge_closes_1013_so_the_client_retries() {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    let ticket = ticket_of(&drain(&mut conn));
    conn.handle_input(
        T0,
        Input::Auth {
            ticket,
            verdict: AuthVerdict::Unavailable {
                reason: "the backend is unreachable".into(),
            },
        },
    );
    assert_eq!(
        sent(&drain(&mut conn)),
        ["close 1013 unavailable: the backend is unreachable".to_owned()]
    );
}

/// An open connection whose credential expires at `expiry`.
fn open_expiring_at(expiry: Instant) -> Conn {
    let mut conn = Conn::new(Limits::default(), T0, 1);
    text(&mut conn, T0, json!({"type": "connect", "protocol": 1}));
    let ticket = ticket_of(&drain(&mut conn));
    let verdict = AuthVerdict::Accepted {
        expires_at: Some(expiry),
        pacing: None,
    };
    conn.handle_input(T0, Input::Auth { ticket, verdict });
    drain(&mut conn);
    conn
}

#[test]
fn a_credential_that_expires_closes_4001_at_the_next_message() {
    let mut conn = open_expiring_at(at(1_000));
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
fn a_credential_that_expires_closes_4001_on_time_without_any_message() {
    let mut conn = open_expiring_at(at(1_000));
    assert_eq!(
        conn.poll_timeout(),
        Some(at(1_000)),
        "the expiry is a timer"
    );
    conn.handle_timeout(at(999));
    assert_eq!(closed_with(&drain(&mut conn)), None);
    conn.handle_timeout(at(1_000));
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
    conn.handle_input(
        T0,
        Input::Auth {
            ticket: ticket_of(&out),
            verdict: AuthVerdict::accepted(),
        },
    );
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
