//! Publications cannot grow the history without bound: it is bounded in
//! bytes per channel and over all channels. When full, the oldest entries
//! go, and a resume past them gets `recovered: false` (never a partial
//! replay).

use belay_proto::message::{ClientMessage, ServerMessage, StreamPosition, Subscribe};
use belay_server::broker::HistoryLimits;
use belay_server::{Server, ServerConfig};
use serde_json::json;

use crate::common::{self, Raw};

/// A publication of about 30 KB.
fn big(n: usize) -> serde_json::Value {
    json!({ "n": n, "pad": "x".repeat(30_000) })
}

/// Subscribe to `channel` from `offset` of `epoch`: whether it recovered,
/// and the offsets replayed (up to `top`).
async fn resume(
    raw: &mut Raw,
    channel: &str,
    epoch: &str,
    offset: u64,
    top: u64,
) -> (bool, Vec<u64>) {
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: channel.into(),
        since: Some(StreamPosition {
            epoch: epoch.into(),
            offset,
        }),
        token: None,
    }))
    .await;
    let Some(ServerMessage::Subscribed(sub)) = raw.recv_skipping_pings().await else {
        panic!("subscribed expected")
    };
    let mut replayed = Vec::new();
    if sub.recovered {
        while replayed.last().copied().unwrap_or(offset) < top {
            match raw.recv_skipping_pings().await {
                Some(ServerMessage::Publication(p)) => replayed.push(p.offset),
                other => panic!("expected a publication, got {other:?}"),
            }
        }
    }
    (sub.recovered, replayed)
}

fn server(history: HistoryLimits) -> Server {
    common::server(ServerConfig::default().with_history(history))
}

#[tokio::test]
async fn a_channel_keeps_at_most_its_bytes_and_a_resume_past_them_is_not_recovered() {
    let mut history = HistoryLimits::default();
    history.max_bytes_per_channel = 100_000;
    let server = server(history);
    let addr = common::start(&server).await;
    let mut epoch = String::new();
    for n in 1..=10 {
        epoch = server
            .publish("big", big(n))
            .await
            .expect("published")
            .epoch;
    }
    let (mut raw, _) = Raw::connected(addr, None).await;
    // 10 × 30 KB were published; about three fit in 100 KB.
    assert_eq!(
        resume(&mut raw, "big", &epoch, 0, 10).await,
        (false, vec![])
    );
    assert_eq!(
        resume(&mut raw, "big", &epoch, 8, 10).await,
        (true, vec![9, 10])
    );
}

#[tokio::test]
async fn over_the_server_wide_bytes_the_oldest_publications_go_first() {
    let mut history = HistoryLimits::default();
    history.max_bytes = 300_000;
    let server = server(history);
    let addr = common::start(&server).await;
    let mut epoch = String::new();
    // 20 channels × 30 KB: 600 KB, twice the bound.
    for n in 0..20 {
        epoch = server
            .publish(&format!("c{n}"), big(n))
            .await
            .expect("published")
            .epoch;
    }
    let held = crate::gauge(&server, "belay_history_bytes");
    assert!(held > 0.0 && held <= 300_000.0, "{held} bytes held");
    let (mut raw, _) = Raw::connected(addr, None).await;
    assert_eq!(
        resume(&mut raw, "c0", &epoch, 0, 1).await,
        (false, vec![]),
        "the oldest went"
    );
    assert_eq!(
        resume(&mut raw, "c19", &epoch, 0, 1).await,
        (true, vec![1]),
        "the newest stays"
    );
}
