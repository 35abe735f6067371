//! Subscriptions: readiness waits for the server's confirmation, an
//! unconfirmed subscribe is repeated, a lost one is restored on the same
//! connection, and a forbidden one fails for good.

use std::time::Duration;

use belay_proto::message::ClientMessage;
use belay_proto::{Event, Instant};

use crate::common::{closes, events, sent, unsubscribed, Driver};
use crate::support::subscribed;

#[test]
fn a_subscription_counts_only_once_confirmed() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    let out = d.establish(id);
    assert!(sent(&out).iter().any(
        |m| matches!(m, ClientMessage::Subscribe(s) if s.channel == "news" && s.since.is_none())
    ));
    assert!(d.session.readiness().protocol);
    assert!(!d.session.is_ready(), "not ready until the server confirms");
    let out = d.server(id, subscribed("news", 0, false));
    assert!(events(&out).contains(&Event::Subscribed {
        channel: "news".into(),
        recovered: false
    }));
    assert!(d.session.is_ready());
}

#[test]
fn an_unconfirmed_subscribe_is_repeated_on_the_same_transport() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    let out = d.next_timeout();
    assert_eq!(d.now, Instant::from_millis(5_000));
    assert!(matches!(sent(&out)[..], [ClientMessage::Subscribe(_)]));
    assert!(closes(&out).is_empty());
    assert_eq!(d.session.current_transport(), Some(id));
}

#[test]
fn a_lost_subscription_is_restored_without_touching_the_connection() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "news").unwrap();
    let id = d.start();
    d.establish(id);
    d.server(id, subscribed("news", 0, false));
    let out = d.server(id, unsubscribed("news", "unavailable"));
    assert!(events(&out).contains(&Event::SubscriptionLost {
        channel: "news".into(),
        code: "unavailable".into()
    }));
    let r = d.session.readiness();
    assert!(r.transport && r.protocol && !r.service);
    let lost_at = d.now;
    let out = d.next_timeout();
    assert!(
        d.now - lost_at <= Duration::from_secs(2),
        "resubscribes within 2 s"
    );
    assert!(matches!(sent(&out)[..], [ClientMessage::Subscribe(_)]));
    d.server(id, subscribed("news", 0, true));
    assert!(d.session.is_ready());
    assert_eq!(d.session.current_transport(), Some(id));
}

#[test]
fn a_forbidden_channel_fails_for_good_and_does_not_block_readiness() {
    let mut d = Driver::fixed(1_000);
    d.session.subscribe(d.now, "secret").unwrap();
    let id = d.start();
    d.establish(id);
    let out = d.server(id, unsubscribed("secret", "forbidden"));
    assert!(events(&out).contains(&Event::SubscriptionFailed {
        channel: "secret".into(),
        code: "forbidden".into()
    }));
    assert!(d.session.is_ready());
}
