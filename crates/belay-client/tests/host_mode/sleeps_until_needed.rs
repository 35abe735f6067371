//! A host sleeps while nobody wants it, a call wakes it and succeeds
//! within the bound, and it sleeps again after the grace.

use std::time::{Duration, Instant};

use belay_client::Client;
use serde_json::json;

use crate::relay::{code, host, listing, relay, timing, until};

#[tokio::test]
async fn a_call_wakes_a_sleeping_host_which_sleeps_again_after_the_grace() {
    let (_server, url, base) = relay().await;
    let pc = host(&url, "pc-1");
    // Nobody needs it: it beats, and never connects.
    let status = until(&pc, |s| s.stats.beats >= 3).await;
    assert!(!status.awake, "{status:?}");
    assert_eq!(status.stats.starts, 0);
    assert_eq!(status.id.as_deref(), Some("pc-1"));
    assert_eq!(listing(&base).await["hosts"][0]["state"], "asleep");

    let client = Client::builder(url.clone())
        .host_timing(&timing())
        .connect()
        .expect("a usable URL");
    client.ready().await.expect("ready");
    let asked = Instant::now();
    let echoed = client
        .call_host("pc-1", "echo", json!({"n": 7}))
        .await
        .expect("the woken host answers");
    let waited = asked.elapsed();
    assert_eq!(echoed, json!({"n": 7}));
    assert!(
        waited <= timing().wake_bound() + Duration::from_secs(1),
        "answered in {waited:?}, bound {:?}",
        timing().wake_bound()
    );
    let awake = until(&pc, |s| s.stats.starts == 1).await;
    assert!(awake.stats.starts == 1);
    // A host method's error is the caller's error.
    let failed = client.call_host("pc-1", "fail", json!(null)).await;
    assert_eq!(code(&failed), "not_found");

    // Grace (300 ms) and minimum awake time (200 ms) pass: asleep again.
    let asleep = until(&pc, |s| !s.awake && s.stats.stops == 1).await;
    assert_eq!(asleep.stats.starts, 1);
    assert_eq!(listing(&base).await["hosts"][0]["state"], "asleep");
    // The next call wakes it again.
    let again = client
        .call_host("pc-1", "echo", json!(2))
        .await
        .expect("woken again");
    assert_eq!(again, json!(2));
    assert_eq!(until(&pc, |s| s.stats.starts == 2).await.stats.starts, 2);
    pc.stop().await;
    client.close().await;
}

#[tokio::test]
async fn a_subscriber_to_the_hosts_channel_keeps_it_awake_and_gets_its_publications() {
    let (_server, url, _base) = relay().await;
    let pc = host(&url, "pc-2");
    until(&pc, |s| s.stats.beats >= 1 && !s.awake).await;
    let client = Client::builder(url.clone())
        .connect()
        .expect("a usable URL");
    let mut state = client.watch_host("pc-2").await.expect("watching");
    let mut feed = client.subscribe("$host:pc-2").await.expect("subscribed");
    client.ready().await.expect("ready");
    until(&pc, |s| s.awake).await;
    // It stays awake while the subscriber is there, past grace and minimum.
    let later = until(&pc, |s| s.stats.beats >= 12).await;
    assert!(later.awake);
    assert_eq!(later.stats.stops, 0);
    // Its publications reach the subscriber (the session may still be
    // attaching: retry until it is ready).
    let published = loop {
        match pc.publish(json!({"cpu": 3})).await {
            Ok(result) => break result,
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    };
    assert!(published.get().contains("offset"));
    let item = tokio::time::timeout(Duration::from_secs(5), feed.next())
        .await
        .expect("in time");
    assert!(
        matches!(&item, Some(belay_client::Item::Publication(p)) if p.data == json!({"cpu": 3})),
        "{item:?}"
    );
    // The state channel said it was woken and is ready.
    let mut seen = Vec::new();
    while !seen.iter().any(|s: &String| s == "ready") {
        let next = tokio::time::timeout(Duration::from_secs(5), state.next())
            .await
            .expect("in time");
        let Some(belay_client::Item::Publication(p)) = next else {
            panic!("{next:?}")
        };
        seen.push(
            p.data.parse::<serde_json::Value>().unwrap()["state"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert!(seen.contains(&"waking".to_owned()), "{seen:?}");
    drop(feed);
    let asleep = until(&pc, |s| !s.awake).await;
    assert_eq!(asleep.stats.stops, 1);
    pc.stop().await;
    client.close().await;
}
