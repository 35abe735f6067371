//! Subscribing creates channels: they must cost little, be freed when left,
//! have bounded names, and a storm of them must not stall others.

use belay_proto::message::{ClientMessage, ServerMessage, Unsubscribe};
use belay_server::broker::HistoryLimits;
use belay_server::ServerConfig;

use crate::common::{self, metric, metric_until, Raw};
use crate::{echo_works, server, subscribe};

#[tokio::test]
async fn channels_made_by_subscribing_are_freed_when_their_subscribers_leave() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    for n in 0..100 {
        raw.send(&subscribe(&format!("room-{n}"))).await;
        assert!(matches!(
            raw.recv_skipping_pings().await,
            Some(ServerMessage::Subscribed(_))
        ));
    }
    assert_eq!(metric(addr, "belay_channels").await, 100.0);
    for n in 0..50 {
        raw.send(&ClientMessage::Unsubscribe(Unsubscribe {
            channel: format!("room-{n}"),
        }))
        .await;
    }
    metric_until(addr, "belay_channels", |c| c == 50.0).await;
    // The rest go with the connection.
    drop(raw);
    metric_until(addr, "belay_channels", |c| c == 0.0).await;
}

#[tokio::test]
async fn a_channel_name_over_the_limit_is_refused_and_creates_nothing() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    raw.send(&subscribe(&"n".repeat(60 * 1024))).await;
    match raw.recv_skipping_pings().await {
        Some(ServerMessage::Unsubscribed(u)) => {
            assert_eq!(u.code, "bad_request");
            assert_eq!(u.channel.len(), 255, "the refusal names a bounded prefix");
        }
        other => panic!("expected unsubscribed bad_request, got {other:?}"),
    }
    raw.send(&subscribe("")).await;
    assert!(matches!(
        raw.recv_skipping_pings().await,
        Some(ServerMessage::Unsubscribed(u)) if u.code == "bad_request"
    ));
    assert_eq!(metric(addr, "belay_channels").await, 0.0);
    echo_works(&mut raw, 1).await;
}

#[tokio::test]
async fn a_storm_past_the_channel_cap_is_refused_and_a_bystander_is_answered() {
    let mut history = HistoryLimits::default();
    history.max_channels = 300;
    let server = server(ServerConfig::default().with_history(history));
    let addr = common::start(&server).await;
    let (mut bystander, _) = Raw::connected(addr, None).await;
    let mut stormers = Vec::new();
    for s in 0..4 {
        let (mut raw, _) = Raw::connected(addr, None).await;
        for n in 0..150 {
            raw.send(&subscribe(&format!("storm-{s}-{n}"))).await;
        }
        stormers.push(raw);
    }
    let (mut granted, mut refused) = (0, 0);
    for raw in &mut stormers {
        for _ in 0..150 {
            match raw.recv_skipping_pings().await {
                Some(ServerMessage::Subscribed(_)) => granted += 1,
                Some(ServerMessage::Unsubscribed(u)) => {
                    assert_eq!(u.code, "unavailable");
                    refused += 1;
                }
                other => panic!("{other:?}"),
            }
        }
    }
    assert_eq!((granted, refused), (300, 300));
    echo_works(&mut bystander, 7).await;
    drop(stormers);
    metric_until(addr, "belay_channels", |c| c == 0.0).await;
}
