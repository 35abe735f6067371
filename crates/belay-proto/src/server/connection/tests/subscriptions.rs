//! Subscriptions: the subscribe order, refusals, replacement, live frames, lag, a lost broker.

use super::*;

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
    conn.handle_input(
        T0,
        Input::SubscribeAuthorized {
            ticket: ask,
            verdict: Ok(None),
        },
    );
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
    conn.handle_input(
        T0,
        Input::Joined {
            ticket: *ticket,
            answer: joined("a", 11, 3, replay),
            room: None,
        },
    );
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
    conn.handle_input(
        T0,
        Input::Live {
            channel: "a",
            subscription: 11,
            offset: 5,
            frame: "dup 5",
        },
    );
    conn.handle_input(
        T0,
        Input::Live {
            channel: "a",
            subscription: 10,
            offset: 6,
            frame: "stale 6",
        },
    );
    conn.handle_input(
        T0,
        Input::Live {
            channel: "a",
            subscription: 11,
            offset: 6,
            frame: "pub 6",
        },
    );
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
    conn.handle_input(
        T0,
        Input::SubscribeAuthorized {
            ticket: ask,
            verdict: Err(ErrorBody::new("forbidden", "no")),
        },
    );
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
    conn.handle_input(
        T0,
        Input::SubscribeAuthorized {
            ticket: ask,
            verdict: Ok(None),
        },
    );
    let out = drain(&mut conn);
    assert!(sent(&out)[0].contains(r#""code":"forbidden""#), "{out:?}");
    assert!(out.contains(&Output::Event(Event::SubscribeRefused)));
}

#[test]
fn a_broker_without_room_refuses_unavailable() {
    let mut conn = open();
    text(&mut conn, T0, json!({"type": "subscribe", "channel": "a"}));
    let ask = ticket_of(&drain(&mut conn));
    conn.handle_input(
        T0,
        Input::SubscribeAuthorized {
            ticket: ask,
            verdict: Ok(None),
        },
    );
    let join = ticket_of(&drain(&mut conn));
    conn.handle_input(
        T0,
        Input::Joined {
            ticket: join,
            answer: JoinAnswer::NoRoom,
            room: None,
        },
    );
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
    conn.handle_input(
        T0,
        Input::SubscribeAuthorized {
            ticket: ask,
            verdict: Ok(None),
        },
    );
    let first = ticket_of(&drain(&mut conn));
    text(
        &mut conn,
        T0,
        json!({"type": "unsubscribe", "channel": "a"}),
    );
    conn.handle_input(
        T0,
        Input::Joined {
            ticket: first,
            answer: joined("a", 5, 0, vec![]),
            room: None,
        },
    );
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
    conn.handle_input(
        T0,
        Input::Lagged {
            channel: "a",
            subscription: 2,
        },
    );
    assert!(drain(&mut conn).is_empty(), "a replaced subscription's lag");
    conn.handle_input(
        T0,
        Input::Lagged {
            channel: "a",
            subscription: 3,
        },
    );
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
fn a_subscription_the_broker_ends_is_left_with_the_brokers_error() {
    let mut conn = open();
    subscribe(&mut conn, T0, "a", 1, 0);
    subscribe(&mut conn, T0, "b", 2, 0);
    let down = ErrorBody::new("unavailable", "service down");
    conn.handle_input(
        T0,
        Input::SubscriptionEnded {
            channel: "a",
            subscription: 7,
            error: &down,
        },
    );
    assert!(drain(&mut conn).is_empty(), "a stale subscription's end");
    conn.handle_input(
        T0,
        Input::SubscriptionEnded {
            channel: "a",
            subscription: 1,
            error: &down,
        },
    );
    let out = drain(&mut conn);
    assert!(out.contains(&Output::Leave {
        channel: "a".into(),
        subscription: 1
    }));
    assert_eq!(
        sent(&out),
        [r#"{"type":"unsubscribed","channel":"a","code":"unavailable","reason":"service down"}"#]
    );
    assert_eq!(conn.subscription_count(), 1, "b is untouched");
}
