//! Scripted timelines: steps follow the clock, and act on the wire.

mod common;

use std::time::{Duration, Instant};

use belay_lab::{Timeline, Toxic, ToxicKind};
use common::*;
use tokio::io::AsyncWriteExt;

fn names(proxy: &belay_lab::Proxy) -> Vec<String> {
    proxy.toxics().iter().map(|t| t.name().to_owned()).collect()
}

#[tokio::test(start_paused = true)]
async fn timeline_steps_follow_the_clock() {
    let proxy = proxy_to(echo_upstream().await).await;
    let lag = ToxicKind::Latency {
        latency_ms: 200,
        jitter_ms: 0,
    };
    let timeline = Timeline::new()
        .add(Duration::ZERO, Toxic::new(lag))
        .add(Duration::from_secs(2), Toxic::new(ToxicKind::Blackhole))
        .remove(Duration::from_secs(4), "latency_both")
        .clear(Duration::from_secs(5));
    proxy.run_timeline(timeline).unwrap();
    assert!(proxy.timeline_running());
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(names(&proxy), ["latency_both"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(names(&proxy), ["latency_both", "blackhole_both"]);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(names(&proxy), ["blackhole_both"]);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(names(&proxy).is_empty());
    assert!(!proxy.timeline_running());
}

#[tokio::test]
async fn a_timeline_blackholes_then_releases_on_the_wire() {
    let proxy = proxy_to(echo_upstream().await).await;
    let mut client = connect(&proxy).await;
    round_trip(&mut client, b"warm").await;
    let timeline = Timeline::from_json(
        r#"{"steps":[{"at_ms":0,"action":"add","toxic":{"type":"blackhole"}},
                     {"at_ms":400,"action":"clear"}]}"#,
    )
    .unwrap();
    let start = Instant::now();
    proxy.run_timeline(timeline).unwrap();
    let deadline = Instant::now() + SOON;
    while proxy.toxics().is_empty() {
        assert!(Instant::now() < deadline, "the first step never ran");
        tokio::task::yield_now().await;
    }
    client.write_all(b"held").await.unwrap();
    assert_eq!(read_n(&mut client, 4).await, b"held");
    let ms = start.elapsed().as_millis();
    assert!(ms >= 400, "released after {ms} ms");
    assert!(proxy.toxics().is_empty());
}

#[tokio::test]
async fn a_new_timeline_replaces_the_running_one() {
    let proxy = proxy_to(echo_upstream().await).await;
    let far = Timeline::new().add(Duration::from_secs(60), Toxic::new(ToxicKind::Blackhole));
    proxy.run_timeline(far).unwrap();
    proxy.run_timeline(Timeline::new()).unwrap();
    let deadline = Instant::now() + SOON;
    while proxy.timeline_running() {
        assert!(Instant::now() < deadline, "the empty timeline never ended");
        tokio::task::yield_now().await;
    }
    proxy.stop_timeline();
    assert!(proxy.toxics().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_repeating_timeline_flaps_until_stopped() {
    let proxy = proxy_to(echo_upstream().await).await;
    let refuse = Toxic::new(ToxicKind::Refuse {
        with: belay_lab::RefuseWith::Reset,
    });
    let flapping = Timeline::new()
        .add(Duration::ZERO, refuse)
        .clear(Duration::from_secs(1))
        .repeat_every(Duration::from_secs(3));
    let start = tokio::time::Instant::now();
    proxy.run_timeline(flapping).unwrap();
    for round in 0..3u64 {
        let base = Duration::from_secs(3 * round);
        tokio::time::sleep_until(start + base + Duration::from_millis(500)).await;
        assert_eq!(names(&proxy), ["refuse_both"], "round {round}, refusing");
        tokio::time::sleep_until(start + base + Duration::from_millis(2000)).await;
        assert!(names(&proxy).is_empty(), "round {round}, open");
    }
    assert!(proxy.timeline_running());
    proxy.stop_timeline();
    assert!(!proxy.timeline_running());
}
