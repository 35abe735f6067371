//! A call to a host that does not wake settles `host_asleep` after the
//! wake bound, not before and not never; unknown and offline hosts are
//! refused at once.

use std::time::{Duration, Instant};

use belay_client::Client;
use serde_json::json;

use crate::relay::{beat, code, relay, timing};

#[tokio::test]
async fn a_host_that_never_wakes_fails_the_call_after_the_wake_bound() {
    let (_server, url, base) = relay().await;
    // Registered by one heartbeat, and never connecting.
    let (status, body) = beat(&base, "host:mute").await;
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["needed"], false);
    assert_eq!(answer["interval_ms"], 200);
    assert_eq!(answer["host"], "mute");

    let client = Client::builder(url)
        .host_timing(&timing())
        .connect()
        .expect("a usable URL");
    client.ready().await.expect("ready");
    let asked = Instant::now();
    let call = client.call_host("mute", "echo", json!(1));
    // While it waits, the host is needed: its next heartbeat says so.
    let (waited, (_, during)) = tokio::join!(
        async {
            let result = call.await;
            (asked.elapsed(), result)
        },
        async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            beat(&base, "host:mute").await
        }
    );
    let (elapsed, result) = waited;
    assert_eq!(code(&result), "host_asleep");
    assert!(
        elapsed >= timing().wake_bound()
            && elapsed < timing().wake_bound() + Duration::from_secs(3),
        "settled after {elapsed:?}, bound {:?}",
        timing().wake_bound()
    );
    let during: serde_json::Value = serde_json::from_str(&during).unwrap();
    assert_eq!(during["needed"], true);
    assert_eq!(during["state"], "waking");
    client.close().await;
}

#[tokio::test]
async fn an_unknown_host_is_not_found_and_an_offline_one_is_refused_at_once() {
    let (_server, url, base) = relay().await;
    let client = Client::builder(url).connect().expect("a usable URL");
    client.ready().await.expect("ready");
    assert_eq!(
        code(&client.call_host("nobody-here", "echo", json!(1)).await),
        "not_found"
    );
    assert_eq!(
        code(&client.call_host("bad id", "echo", json!(1)).await),
        "bad_request"
    );
    let (status, _) = beat(&base, "host:gone").await;
    assert_eq!(status, 200);
    // Three intervals (600 ms) without a heartbeat: offline.
    tokio::time::sleep(timing().offline_after() + Duration::from_millis(100)).await;
    let asked = Instant::now();
    assert_eq!(
        code(&client.call_host("gone", "echo", json!(1)).await),
        "host_offline"
    );
    assert!(
        asked.elapsed() < timing().wake_bound(),
        "refused without waiting"
    );
    client.close().await;
}
