use super::*;
use crate::broker::{LiveInbox, LiveItem};
use std::sync::Arc;

fn broker(max_channels: usize) -> MemoryBroker {
    MemoryBroker::new(HistoryLimits {
        max_channels,
        ..HistoryLimits::default()
    })
}

fn inbox() -> LiveInbox {
    LiveInbox::new(1_024, 1 << 20, belay_proto::message::Codec::Json)
}

#[test]
fn a_full_broker_refuses_new_channels_and_frees_left_ones_at_once() {
    let b = broker(2);
    let conn = inbox();
    let a = conn.sender(Arc::from("a"));
    let a_id = a.id();
    b.subscribe_now("a", None, a).unwrap();
    b.subscribe_now("b", None, conn.sender(Arc::from("b")))
        .unwrap();
    // Existing channels stay open to more subscribers.
    assert!(b
        .subscribe_now("a", None, conn.sender(Arc::from("a")))
        .is_ok());
    assert_eq!(
        b.subscribe_now("c", None, conn.sender(Arc::from("c")))
            .unwrap_err(),
        SubscribeError::TooManyChannels
    );
    b.unsubscribe("a", a_id);
    assert_eq!(b.channel_count(), 2, "a still has a subscriber");
    let stranger = inbox().sender(Arc::from("b")).id();
    b.unsubscribe("b", stranger);
    assert_eq!(
        b.channel_count(),
        2,
        "an unknown subscriber changes nothing"
    );
}

#[test]
fn a_channel_whose_last_subscriber_leaves_is_freed() {
    let b = broker(10);
    let conn = inbox();
    let ids: Vec<_> = (0..3)
        .map(|i| {
            let live = conn.sender(Arc::from(format!("c{i}").as_str()));
            let id = live.id();
            b.subscribe_now(&format!("c{i}"), None, live).unwrap();
            id
        })
        .collect();
    assert_eq!(b.channel_count(), 3);
    for (i, id) in ids.into_iter().enumerate() {
        b.unsubscribe(&format!("c{i}"), id);
    }
    assert_eq!(b.channel_count(), 0);
}

#[test]
fn a_gone_connection_frees_its_channels_when_room_is_needed() {
    let b = broker(1);
    let conn = inbox();
    b.subscribe_now("a", None, conn.sender(Arc::from("a")))
        .unwrap();
    drop(conn);
    let other = inbox();
    assert!(b
        .subscribe_now("b", None, other.sender(Arc::from("b")))
        .is_ok());
    assert_eq!(b.channel_count(), 1);
}

#[test]
fn a_channel_with_history_is_kept_and_publishing_always_creates() {
    let b = broker(1);
    b.publish_now("news", serde_json::json!(1).into()).unwrap();
    b.publish_now("more", serde_json::json!(2).into()).unwrap();
    assert_eq!(b.channel_count(), 2);
    let conn = inbox();
    assert_eq!(
        b.subscribe_now("x", None, conn.sender(Arc::from("x")))
            .unwrap_err(),
        SubscribeError::TooManyChannels
    );
    let sub = b
        .subscribe_now("news", None, conn.sender(Arc::from("news")))
        .unwrap();
    assert_eq!(sub.subscribed.offset, 1);
}

#[test]
fn publications_reach_every_subscriber_in_order() {
    let b = broker(10);
    let mut first = inbox();
    let mut second = inbox();
    b.subscribe_now("p", None, first.sender(Arc::from("p")))
        .unwrap();
    b.subscribe_now("p", None, second.sender(Arc::from("p")))
        .unwrap();
    for n in 1..=3 {
        b.publish_now("p", serde_json::json!(n).into()).unwrap();
    }
    for conn in [&mut first, &mut second] {
        let offsets: Vec<u64> = std::iter::from_fn(|| conn.try_next())
            .map(|item| match item {
                LiveItem::Frame { offset, .. } => offset,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(offsets, [1, 2, 3]);
    }
}

fn offsets(page: &HistoryPage) -> Vec<u64> {
    page.publications.iter().map(|p| p.offset).collect()
}

#[test]
fn history_reads_what_is_held_either_way_with_the_position() {
    let b = MemoryBroker::new(HistoryLimits {
        max_len: 3,
        ..HistoryLimits::default()
    });
    for n in 1..=5 {
        b.publish_now("h", serde_json::json!(n).into()).unwrap();
    }
    let page = b.history_now("h", &HistoryQuery::new(10)).unwrap();
    assert_eq!(offsets(&page), [3, 4, 5], "the last three are held");
    assert_eq!(page.position.offset, 5);
    assert_eq!(page.publications[0].data.get(), "3");
    let newest = b
        .history_now("h", &HistoryQuery::new(2).reverse(true))
        .unwrap();
    assert_eq!(offsets(&newest), [5, 4]);
    let after = b
        .history_now("h", &HistoryQuery::new(10).since(page.position.clone()))
        .unwrap();
    assert!(after.publications.is_empty(), "nothing after the top");
    let before = b
        .history_now(
            "h",
            &HistoryQuery::new(10)
                .since(StreamPosition {
                    epoch: page.position.epoch.clone(),
                    offset: 4,
                })
                .reverse(true),
        )
        .unwrap();
    assert_eq!(offsets(&before), [3]);
}

#[test]
fn history_of_an_unknown_channel_is_empty_in_the_epoch_it_would_get() {
    let b = broker(10);
    let page = b.history_now("nobody", &HistoryQuery::new(10)).unwrap();
    assert_eq!((page.publications.len(), page.position.offset), (0, 0));
    assert_eq!(b.channel_count(), 0, "reading creates nothing");
    let first = b
        .publish_now("nobody", serde_json::json!(1).into())
        .unwrap();
    assert_eq!(first.epoch, page.position.epoch);
    let stale = StreamPosition {
        epoch: "another".into(),
        offset: 1,
    };
    assert_eq!(
        b.history_now("nobody", &HistoryQuery::new(1).since(stale)),
        Err(HistoryError::EpochChanged {
            current: StreamPosition {
                epoch: first.epoch.clone(),
                offset: 1
            }
        })
    );
    let beyond = StreamPosition {
        epoch: first.epoch,
        offset: 2,
    };
    assert!(matches!(
        b.history_now("nobody", &HistoryQuery::new(1).since(beyond)),
        Err(HistoryError::BeyondTop { .. })
    ));
}

#[test]
fn list_channels_counts_live_subscribers_in_name_order() {
    let b = broker(10);
    let first = inbox();
    let second = inbox();
    for (conn, channel) in [(&first, "chat:2"), (&first, "chat:1"), (&second, "chat:1")] {
        b.subscribe_now(channel, None, conn.sender(Arc::from(channel)))
            .unwrap();
    }
    b.subscribe_now("news", None, second.sender(Arc::from("news")))
        .unwrap();
    b.publish_now("history-only", serde_json::json!(1).into())
        .unwrap();
    let chat = ChannelQuery::new(belay_proto::server::ChannelPattern::new("chat:*"));
    let list = b.list_channels_now(&chat);
    let counts: Vec<_> = list
        .channels
        .iter()
        .map(|c| (c.channel.as_str(), c.subscribers))
        .collect();
    assert_eq!(counts, [("chat:1", 2), ("chat:2", 1)]);
    drop(second);
    let all = ChannelQuery::new(belay_proto::server::ChannelPattern::new("*"));
    let list = b.list_channels_now(&all);
    assert_eq!(
        (list.matched, list.subscriptions),
        (2, 2),
        "a gone connection's subscriptions and a channel without subscribers do not count"
    );
}

#[test]
fn a_freed_published_channel_comes_back_in_a_new_epoch() {
    let b = MemoryBroker::new(HistoryLimits {
        max_len: 0,
        ..HistoryLimits::default()
    });
    let first = b.publish_now("t", serde_json::json!(1).into()).unwrap();
    assert_eq!(b.channel_count(), 0, "no history and nobody listening");
    let again = b.publish_now("t", serde_json::json!(2).into()).unwrap();
    assert_ne!(again.epoch, first.epoch);
    assert_eq!(again.offset, 1);
}

#[test]
fn history_over_max_bytes_gives_back_the_oldest_channels_and_their_bytes() {
    let b = MemoryBroker::new(HistoryLimits {
        max_bytes: 10_000,
        ..HistoryLimits::default()
    });
    for n in 0..100 {
        let data = serde_json::json!("x".repeat(500)).into();
        b.publish_now(&format!("c{n}"), data).unwrap();
        assert!(b.history_bytes() <= 10_000, "{} bytes", b.history_bytes());
    }
    // About 17 publications of ~600 bytes fit: the first channels, with
    // nothing left to hold, were freed.
    assert!(
        (10..30).contains(&b.channel_count()),
        "{}",
        b.channel_count()
    );
    let gone = b.history_now("c0", &HistoryQuery::new(10)).unwrap();
    assert!(gone.publications.is_empty());
    let kept = b.history_now("c99", &HistoryQuery::new(10)).unwrap();
    assert_eq!(offsets(&kept), [1]);
}
