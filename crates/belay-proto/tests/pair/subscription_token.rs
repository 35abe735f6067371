//! Subscription tokens that expire (spec/PROTOCOL.md §5.8): refreshed ahead
//! of the expiry, the subscription lives on without a resubscribe; without
//! a refresh the server ends it (`expired`) and the client subscribes again
//! with the token it has, losing nothing.

use std::time::Duration;

use belay_proto::testing::Pair;
use belay_proto::{Config, Event};
use serde_json::json;

use crate::support::{count, first_at, offsets, C};

const LIFETIME: Duration = Duration::from_secs(30);

/// A ready client subscribed to `private` with a token good for `LIFETIME`.
fn subscribed_with_an_expiring_token(seed: u64) -> Pair {
    let mut pair = Pair::new(Config::default(), seed);
    pair.application_mut().subscription_token_lifetime = Some(LIFETIME);
    pair.command(C, |s, now| s.start(now)).unwrap();
    let token = Some("t1".to_owned());
    pair.command(C, |s, now| s.subscribe_with_token(now, "private", token))
        .unwrap();
    pair.run_for(Duration::from_secs(1));
    assert!(pair.client(C).session.is_ready());
    pair
}

fn publish_every_second(pair: &mut Pair, from: u64, to: u64) {
    for n in from..=to {
        pair.publish("private", json!(n));
        pair.run_for(Duration::from_secs(1));
    }
}

fn subscribed(event: &Event) -> bool {
    matches!(event, Event::Subscribed { .. })
}

#[test]
fn a_subscription_token_refreshed_ahead_of_the_expiry_keeps_the_subscription() {
    let mut pair = subscribed_with_an_expiring_token(81);
    publish_every_second(&mut pair, 1, 25);
    let wanted = |e: &Event| matches!(e, Event::SubscriptionTokenWanted { .. });
    assert!(
        first_at(&pair, C, wanted).is_some(),
        "asked ahead of the expiry"
    );
    pair.command(C, |s, now| {
        s.refresh_subscription_token(now, "private", "t2".into())
    })
    .unwrap();
    publish_every_second(&mut pair, 26, 40);
    let all: Vec<u64> = (1..=40).collect();
    assert_eq!(offsets(&pair, C, "private"), all);
    assert_eq!(count(&pair, C, subscribed), 1, "never resubscribed");
    let lost = |e: &Event| matches!(e, Event::SubscriptionLost { .. });
    assert_eq!(count(&pair, C, lost), 0);
}

#[test]
fn an_expired_subscription_token_ends_the_subscription_and_the_client_subscribes_again() {
    let mut pair = subscribed_with_an_expiring_token(82);
    publish_every_second(&mut pair, 1, 40);
    let expired = |e: &Event| matches!(e, Event::SubscriptionLost { channel, code } if channel == "private" && code == "expired");
    assert_eq!(count(&pair, C, expired), 1, "{:?}", pair.events(C));
    assert_eq!(count(&pair, C, subscribed), 2, "subscribed again");
    pair.run_for(Duration::from_secs(5));
    pair.publish("private", json!(41));
    pair.run_for(Duration::from_secs(1));
    let all: Vec<u64> = (1..=41).collect();
    assert_eq!(offsets(&pair, C, "private"), all, "the resubscribe resumed");
}
