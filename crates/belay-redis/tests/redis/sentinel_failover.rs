//! Redis behind Sentinel: the broker finds the primary through the
//! Sentinels and follows a failover (the primary killed, its replica
//! promoted) without a client reconnecting. What the old primary had not
//! replicated is announced, never lost silently: the promoted replica is
//! another Redis process, so every channel starts a new epoch there and a
//! position from before resumes as `recovered: false`. Publishing during
//! the switch answers `unavailable`. With `wait_replicas`, a publication is
//! acknowledged and sent live only once the replica has it, so the same
//! failover loses nothing and positions resume.

use std::time::Duration;

use crate::common::{
    next, node, publications, publish_once_available, resubscribe, subscribe, three_delivered, Raw,
};
use belay_proto::message::{ServerMessage, StreamPosition};
use belay_redis::RedisConfig;
use belay_server::broker::PublishError;
use belay_test_support::services::{RedisSentinels, MASTER};
use serde_json::json;

/// The broker's configuration for `set`: the Sentinels only (the URL's
/// host is not used), short timeouts.
fn sentinel_config(set: &RedisSentinels) -> RedisConfig {
    RedisConfig::new("redis://unused")
        .sentinel(MASTER, set.sentinel_urls())
        .command_timeout(Duration::from_millis(500))
        .probe_every(Duration::from_millis(200))
}

#[tokio::test]
async fn a_failover_that_loses_unreplicated_publications_announces_them() {
    let mut set = RedisSentinels::start().await;
    let (server, addr) = node(sentinel_config(&set)).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server.publish("news", json!(1)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!(1))]);

    // The replica stops taking the stream: 2 and 3 reach the client live
    // but exist only on the primary, which then dies.
    set.replica.pause();
    server.publish("news", json!(2)).await.expect("published");
    server.publish("news", json!(3)).await.expect("published");
    assert_eq!(
        publications(&mut raw, 2).await,
        [(2, json!(2)), (3, json!(3))]
    );
    set.primary.kill().await;
    set.replica.resume();

    let refused = server.publish("news", json!("during")).await;
    assert!(
        matches!(refused, Err(PublishError::Unavailable(_))),
        "publishing while the primary is gone answers unavailable: {refused:?}"
    );
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends while Redis fails over")
    };
    assert_eq!(ended.code, "unavailable", "retryable: {ended:?}");

    set.wait_for_lines("+switch-master", 1, Duration::from_secs(30))
        .await;
    let seen = StreamPosition {
        epoch: first.epoch.clone(),
        offset: 3,
    };
    let resumed = resubscribe(&mut raw, "news", seen).await;
    assert!(
        !resumed.recovered,
        "2 and 3 are gone with the old primary: the client is told to resync"
    );
    assert_ne!(resumed.epoch, first.epoch, "a new epoch on the new primary");

    let offset = publish_once_available(&server, "news", json!("after")).await;
    assert_eq!(
        publications(&mut raw, 1).await,
        [(offset, json!("after"))],
        "live again on the new primary, same connection"
    );
}

#[tokio::test]
async fn with_wait_replicas_a_failover_loses_nothing_and_positions_resume() {
    let mut set = RedisSentinels::start().await;
    let config = sentinel_config(&set).wait_replicas(1, Duration::from_millis(500));
    let (server, addr) = node(config).await;
    let (mut raw, first) = three_delivered(&server, addr).await;

    let took = set.fail_over().await;
    assert!(took < Duration::from_secs(30), "{took:?}");
    // Resume only once the old subscription has ended (else the two cross).
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends while Redis fails over")
    };
    assert_eq!(ended.code, "unavailable", "retryable: {ended:?}");
    let seen = StreamPosition {
        epoch: first.epoch.clone(),
        offset: 3,
    };
    let resumed = resubscribe(&mut raw, "news", seen).await;
    assert!(
        resumed.recovered,
        "every publication confirmed is on the new primary"
    );
    assert_eq!(resumed.epoch, first.epoch, "the epoch is kept");
    // The new primary has no replica: a publication now cannot be
    // confirmed, and is refused rather than acknowledged (each of the
    // durable connections first finds its old primary gone).
    let mut reasons = Vec::new();
    for _ in 0..20 {
        let refused = server.publish("news", json!(4)).await;
        let Err(PublishError::Unavailable(reason)) = refused else {
            panic!("expected unavailable, got {refused:?}")
        };
        let unconfirmed = reason.contains("0 of 1 replicas");
        reasons.push(reason);
        if unconfirmed {
            return;
        }
    }
    panic!("never refused for want of a replica: {reasons:?}");
}

#[tokio::test]
async fn with_wait_replicas_an_unconfirmed_publication_is_refused_and_not_sent_live() {
    let set = RedisSentinels::start().await;
    let config = sentinel_config(&set).wait_replicas(1, Duration::from_millis(300));
    let (server, addr) = node(config).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    set.replica.pause();
    let refused = server.publish("news", json!("unconfirmed")).await;
    assert!(
        matches!(&refused, Err(PublishError::Unavailable(r)) if r.contains("replicas")),
        "{refused:?}"
    );
    // It is in the primary's history, but no reader is handed it before a
    // replica has it: a resume from the start replays nothing.
    let (mut reader, _) = Raw::connected(addr, None).await;
    let from_start = StreamPosition {
        epoch: first.epoch.clone(),
        offset: 0,
    };
    let ServerMessage::Subscribed(resumed) = subscribe(&mut reader, "news", Some(from_start)).await
    else {
        panic!("subscribed expected")
    };
    assert!(resumed.recovered);
    assert_eq!(
        resumed.offset, 0,
        "the top readers see is the confirmed one"
    );
    set.replica.resume();
    let confirmed = server
        .publish("news", json!("confirmed"))
        .await
        .expect("confirmed");
    // The refused one took an offset and was never sent live; the second's
    // confirmation means the replica has both, so both go live, in order,
    // never the second alone.
    assert_eq!(confirmed.offset, 2);
    assert_eq!(
        publications(&mut raw, 2).await,
        [(1, json!("unconfirmed")), (2, json!("confirmed"))]
    );
}

#[tokio::test]
async fn passwords_for_redis_and_for_the_sentinels_come_from_their_urls() {
    let set = RedisSentinels::start_with_passwords(Some(("redis-pw", "sentinel-pw"))).await;
    let with = |redis: &str, sentinel: &str| {
        let mut config = sentinel_config(&set);
        config.url = format!("redis://:{redis}@unused");
        let urls = set
            .sentinel_urls()
            .iter()
            .map(|u| u.replace("redis://", &format!("redis://:{sentinel}@")))
            .collect::<Vec<_>>();
        config.sentinel(MASTER, urls)
    };
    let (server, addr) = node(with("redis-pw", "sentinel-pw")).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(_) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server
        .publish("news", json!("hi"))
        .await
        .expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!("hi"))]);

    for (redis, sentinel) in [("wrong", "sentinel-pw"), ("redis-pw", "wrong")] {
        let refused = belay_redis::RedisBroker::connect(with(redis, sentinel)).await;
        assert!(
            matches!(refused, Err(belay_redis::ConnectError::Unreachable(_))),
            "a wrong password ({redis}, {sentinel}) is refused at connect: {refused:?}"
        );
    }
}

#[tokio::test]
async fn sentinel_settings_that_cannot_work_are_refused_with_a_typed_error() {
    for config in [
        RedisConfig::new("redis://unused").sentinel(MASTER, Vec::<String>::new()),
        RedisConfig::new("redis://unused").sentinel(MASTER, ["not a url"]),
        RedisConfig::new("not a url").sentinel(MASTER, ["redis://127.0.0.1:1"]),
    ] {
        let refused = belay_redis::RedisBroker::connect(config).await;
        assert!(
            matches!(refused, Err(belay_redis::ConnectError::InvalidUrl(_))),
            "{refused:?}"
        );
    }
    // Well formed, but no Sentinel answers: unreachable, within the timeout.
    let config = RedisConfig::new("redis://unused")
        .sentinel(
            MASTER,
            [format!(
                "redis://127.0.0.1:{}",
                belay_test_support::services::free_port()
            )],
        )
        .command_timeout(Duration::from_millis(500));
    let refused = belay_redis::RedisBroker::connect(config).await;
    assert!(
        matches!(refused, Err(belay_redis::ConnectError::Unreachable(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn over_tls_the_sentinels_and_the_primary_are_reached_and_a_failover_followed() {
    let dir = std::env::temp_dir().join(format!("belay-sentinel-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // The Sentinels name the primary by address: the certificate names it.
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .expect("a certificate");
    let (cert, key) = (dir.join("redis.crt"), dir.join("redis.key"));
    let ca = certified.cert.pem();
    std::fs::write(&cert, &ca).expect("write cert");
    std::fs::write(&key, certified.signing_key.serialize_pem()).expect("write key");
    let tls = belay_test_support::services::RedisTls {
        cert: cert.clone(),
        key,
        ca: cert,
    };
    let mut set = RedisSentinels::start_tls(tls).await;
    assert!(set.sentinel_urls()[0].starts_with("rediss://"));
    let mut config = sentinel_config(&set).tls_ca_pem(ca.into_bytes());
    config.url = "rediss://unused".into();
    let (server, addr) = node(config).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    let ServerMessage::Subscribed(first) = subscribe(&mut raw, "news", None).await else {
        panic!("subscribed expected")
    };
    server.publish("news", json!(1)).await.expect("published");
    assert_eq!(publications(&mut raw, 1).await, [(1, json!(1))]);

    set.fail_over().await;
    // The subscription ends with the old primary's connection; resuming
    // before that would cross its end.
    let ServerMessage::Unsubscribed(ended) = next(&mut raw).await else {
        panic!("the subscription ends while Redis fails over")
    };
    assert_eq!(ended.code, "unavailable", "retryable: {ended:?}");
    let resumed = resubscribe(
        &mut raw,
        "news",
        StreamPosition {
            epoch: first.epoch.clone(),
            offset: 1,
        },
    )
    .await;
    assert_ne!(
        resumed.epoch, first.epoch,
        "a new epoch on the promoted replica"
    );
    let offset = publish_once_available(&server, "news", json!("after")).await;
    assert_eq!(
        publications(&mut raw, 1).await,
        [(offset, json!("after"))],
        "live over TLS on the promoted replica"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
