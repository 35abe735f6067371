use super::*;
use crate::rng::SplitMix64;

fn ms(v: u64) -> Instant {
    Instant::from_millis(v)
}

fn machine() -> Subscriptions {
    Subscriptions::new(
        Duration::from_secs(5),
        BackoffPolicy::fixed(Duration::from_millis(500)),
    )
}

fn confirm(
    subs: &mut Subscriptions,
    channel: &str,
    offset: u64,
    recovered: bool,
) -> Vec<SubscriptionOutput> {
    let mut out = Vec::new();
    subs.handle_subscribed(
        Subscribed {
            channel: channel.into(),
            epoch: "e".into(),
            offset,
            recovered,
        },
        &mut out,
    );
    out
}

fn tokens(out: &[SubscriptionOutput]) -> Vec<Option<String>> {
    out.iter()
        .filter_map(|o| match o {
            SubscriptionOutput::Send(ClientMessage::Subscribe(s)) => Some(s.token.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_subscription_token_goes_with_every_subscribe_of_its_channel() {
    let mut subs = machine();
    let mut out = Vec::new();
    subs.handle_protocol_up(ms(0), &mut out);
    assert!(subs.add_with_token(ms(0), "private:a", Some("st-1".into()), &mut out));
    assert!(subs.add(ms(0), "news", &mut out));
    assert_eq!(tokens(&out), [Some("st-1".to_owned()), None]);
    confirm(&mut subs, "private:a", 4, false);
    // After a reconnect, the resubscribe carries it (and its position);
    // a renewed token replaces it from then on.
    subs.handle_transport_down();
    assert!(subs.set_token("private:a", Some("st-2".into())));
    assert!(!subs.set_token("unknown", None));
    let mut out = Vec::new();
    subs.handle_protocol_up(ms(10), &mut out);
    assert_eq!(
        subscribes(&out),
        [("news".to_owned(), None), ("private:a".to_owned(), Some(4))]
    );
    assert_eq!(tokens(&out), [None, Some("st-2".to_owned())]);
}

fn subscribes(out: &[SubscriptionOutput]) -> Vec<(String, Option<u64>)> {
    out.iter()
        .filter_map(|o| match o {
            SubscriptionOutput::Send(ClientMessage::Subscribe(s)) => {
                Some((s.channel.clone(), s.since.as_ref().map(|p| p.offset)))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn with_no_channels_the_service_level_is_vacuously_confirmed() {
    assert!(machine().all_confirmed());
}

#[test]
fn a_channel_added_before_the_protocol_is_up_waits_and_is_sent_on_welcome() {
    let mut subs = machine();
    let mut out = Vec::new();
    assert!(subs.add(ms(0), "a", &mut out));
    assert!(out.is_empty());
    assert!(!subs.all_confirmed());
    subs.handle_protocol_up(ms(10), &mut out);
    assert_eq!(subscribes(&out), vec![("a".into(), None)]);
    assert_eq!(subs.poll_timeout(), Some(ms(5_010)));
}

#[test]
fn adding_a_channel_twice_is_refused() {
    let mut subs = machine();
    let mut out = Vec::new();
    assert!(subs.add(ms(0), "a", &mut out));
    assert!(!subs.add(ms(0), "a", &mut out));
}

#[test]
fn removing_sends_unsubscribe_only_for_a_channel_the_server_knows() {
    let mut subs = machine();
    let mut out = Vec::new();
    subs.add(ms(0), "idle", &mut out);
    assert!(subs.remove("idle", &mut out));
    assert!(out.is_empty());
    subs.handle_protocol_up(ms(0), &mut out);
    subs.add(ms(0), "live", &mut out);
    out.clear();
    assert!(subs.remove("live", &mut out));
    assert!(matches!(
        &out[..],
        [SubscriptionOutput::Send(ClientMessage::Unsubscribe(u))] if u.channel == "live"
    ));
    assert!(!subs.remove("live", &mut out));
}

#[test]
fn losing_the_transport_keeps_positions_but_not_confirmations() {
    let mut subs = machine();
    let mut out = Vec::new();
    subs.add(ms(0), "a", &mut out);
    subs.handle_protocol_up(ms(0), &mut out);
    confirm(&mut subs, "a", 9, false);
    assert!(subs.is_subscribed("a"));
    subs.handle_transport_down();
    assert!(!subs.is_subscribed("a"));
    assert_eq!(subs.position("a").map(|p| p.offset), Some(9));
    assert_eq!(
        subs.poll_timeout(),
        None,
        "nothing to repeat without a transport"
    );
    out.clear();
    subs.handle_protocol_up(ms(100), &mut out);
    assert_eq!(subscribes(&out), vec![("a".into(), Some(9))]);
}

#[test]
fn an_unsolicited_confirmation_is_ignored() {
    let mut subs = machine();
    let mut out = Vec::new();
    subs.add(ms(0), "a", &mut out);
    assert!(confirm(&mut subs, "a", 1, true).is_empty());
    assert!(confirm(&mut subs, "unknown", 1, true).is_empty());
    assert!(!subs.is_subscribed("a"));
}

#[test]
fn unsubscribed_schedules_a_resubscribe_after_the_policy_delay() {
    let mut subs = machine();
    let mut out = Vec::new();
    let mut rng = SplitMix64::new(1);
    subs.add(ms(0), "a", &mut out);
    subs.handle_protocol_up(ms(0), &mut out);
    confirm(&mut subs, "a", 0, false);
    out.clear();
    subs.handle_unsubscribed(
        ms(1_000),
        Unsubscribed {
            channel: "a".into(),
            code: "unavailable".into(),
            reason: String::new(),
        },
        &mut rng,
        &mut out,
    );
    assert_eq!(subs.poll_timeout(), Some(ms(1_500)));
    out.clear();
    subs.handle_timeout(ms(1_499), &mut out);
    assert!(out.is_empty());
    subs.handle_timeout(ms(1_500), &mut out);
    assert_eq!(subscribes(&out), vec![("a".into(), Some(0))]);
}

#[test]
fn publications_for_unknown_or_unconfirmed_channels_are_counted_and_dropped() {
    let mut subs = machine();
    let mut out = Vec::new();
    subs.add(ms(0), "a", &mut out);
    subs.handle_protocol_up(ms(0), &mut out);
    out.clear();
    for channel in ["a", "b"] {
        subs.handle_publication(
            ms(0),
            Publication {
                channel: channel.into(),
                epoch: "e".into(),
                offset: 1,
                data: crate::message::RawJson::null(),
            },
            &mut out,
        );
    }
    assert!(out.is_empty());
    assert_eq!(subs.stray_publications(), 2);
}
