//! Subscription tokens that expire (spec/PROTOCOL.md §5.8): `sub_expiring`
//! after `subscribed`, `sub_refresh` checked and confirmed or refused, and
//! the subscription ended on time by a timer.

use super::*;

/// A subscription to `channel` whose token is good for `lifetime` from `now`.
fn subscribe_for(conn: &mut Conn, now: Instant, channel: &str, lifetime: Duration) -> Vec<String> {
    text(
        conn,
        now,
        json!({"type": "subscribe", "channel": channel, "token": "s-1"}),
    );
    let ask = ticket_of(&drain(conn));
    conn.handle_input(
        now,
        Input::SubscribeAuthorized {
            ticket: ask,
            verdict: Ok(Some(lifetime)),
        },
    );
    let join = ticket_of(&drain(conn));
    conn.handle_input(
        now,
        Input::Joined {
            ticket: join,
            answer: joined(channel, 7, 0, vec![]),
            room: None,
        },
    );
    sent(&drain(conn))
}

/// Send `sub_refresh` for `channel`: the check's ticket.
fn refresh(conn: &mut Conn, now: Instant, channel: &str) -> Ticket {
    text(
        conn,
        now,
        json!({"type": "sub_refresh", "channel": channel, "token": "s-2"}),
    );
    let outputs = drain(conn);
    outputs
        .iter()
        .find_map(|o| match o {
            Output::CheckSubscriptionToken {
                ticket,
                channel: c,
                token,
            } => {
                assert_eq!((c.as_str(), token.as_str()), (channel, "s-2"));
                Some(*ticket)
            }
            _ => None,
        })
        .expect("the token is checked")
}

#[test]
fn a_limited_token_is_followed_by_sub_expiring() {
    let mut conn = open();
    let out = subscribe_for(&mut conn, at(100), "private:1", Duration::from_secs(60));
    assert_eq!(out.len(), 2, "{out:?}");
    assert!(out[0].contains("\"subscribed\""), "{out:?}");
    assert_eq!(
        out[1],
        r#"{"type":"sub_expiring","channel":"private:1","expires_in_ms":60000}"#
    );
    assert!(conn.poll_timeout().is_some_and(|t| t <= at(60_100)));
}

#[test]
fn an_unrefreshed_subscription_ends_expired_on_time() {
    let mut conn = open();
    subscribe_for(&mut conn, T0, "private:1", Duration::from_secs(10));
    conn.handle_timeout(at(9_999));
    assert!(sent(&drain(&mut conn))
        .iter()
        .all(|m| !m.contains("unsubscribed")));
    conn.handle_timeout(at(10_000));
    let outputs = drain(&mut conn);
    assert!(outputs
        .iter()
        .any(|o| matches!(o, Output::Leave { channel, .. } if channel == "private:1")));
    assert_eq!(
        sent(&outputs),
        [
            r#"{"type":"unsubscribed","channel":"private:1","code":"expired","reason":"subscription token expired"}"#
        ]
    );
}

#[test]
fn a_good_refresh_moves_the_expiry_and_says_so() {
    let mut conn = open();
    subscribe_for(&mut conn, T0, "private:1", Duration::from_secs(10));
    let check = refresh(&mut conn, at(8_000), "private:1");
    conn.handle_input(
        at(8_000),
        Input::SubRefreshChecked {
            ticket: check,
            verdict: Ok(Some(Duration::from_secs(30))),
        },
    );
    assert_eq!(
        sent(&drain(&mut conn)),
        [r#"{"type":"sub_expiring","channel":"private:1","expires_in_ms":30000}"#]
    );
    conn.handle_timeout(at(10_000));
    assert!(sent(&drain(&mut conn)).is_empty(), "the old expiry is gone");
    // Pings answered meanwhile keep the connection open.
    text(&mut conn, at(30_000), json!({"type": "pong"}));
    drain(&mut conn);
    conn.handle_timeout(at(38_000));
    let out = sent(&drain(&mut conn));
    assert!(out.iter().any(|m| m.contains("\"expired\"")), "{out:?}");
}

#[test]
fn a_refused_refresh_ends_the_subscription_with_the_refusal() {
    let mut conn = open();
    subscribe_for(&mut conn, T0, "private:1", Duration::from_secs(10));
    let check = refresh(&mut conn, at(1_000), "private:1");
    let denied = ErrorBody::new("forbidden", "the subscription token is for another user");
    conn.handle_input(
        at(1_000),
        Input::SubRefreshChecked {
            ticket: check,
            verdict: Err(denied),
        },
    );
    let outputs = drain(&mut conn);
    assert!(outputs.iter().any(|o| matches!(o, Output::Leave { .. })));
    assert_eq!(
        sent(&outputs),
        [
            r#"{"type":"unsubscribed","channel":"private:1","code":"forbidden","reason":"the subscription token is for another user"}"#
        ]
    );
    conn.handle_timeout(at(10_000));
    let later = sent(&drain(&mut conn));
    assert!(
        later.iter().all(|m| !m.contains("private:1")),
        "nothing left to expire: {later:?}"
    );
}

#[test]
fn a_refresh_for_a_channel_not_held_is_ignored() {
    let mut conn = open();
    text(
        &mut conn,
        T0,
        json!({"type": "sub_refresh", "channel": "private:9", "token": "s"}),
    );
    let outputs = drain(&mut conn);
    assert!(!outputs
        .iter()
        .any(|o| matches!(o, Output::CheckSubscriptionToken { .. })));
    assert!(sent(&outputs).is_empty());
}

#[test]
fn a_subscription_without_a_limited_token_never_expires() {
    let mut conn = open();
    subscribe(&mut conn, T0, "news", 1, 0);
    conn.handle_timeout(at(10_000_000));
    assert!(sent(&drain(&mut conn))
        .iter()
        .all(|m| !m.contains("unsubscribed")));
}
