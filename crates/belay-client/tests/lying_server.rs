//! The client against a scripted server (127.0.0.1, port 0) that lies
//! about a resume: what the application sees stays true (no duplicate,
//! every gap announced). The ping-interval clamp is a 180 s bound, checked
//! in virtual time (crates/belay-proto/tests/hostile_server/ping_interval.rs).

mod common;

use belay_client::{Client, Item};
use common::scripted::{accept, establish, listen, next_json, send_text, BOUND};
use tokio::net::TcpStream;
use tokio_websockets::WebSocketStream;

async fn subscribed(ws: &mut WebSocketStream<TcpStream>, offset: u64, recovered: bool) {
    let subscribe = next_json(ws).await.expect("a subscribe");
    assert_eq!(subscribe["type"], "subscribe", "{subscribe}");
    send_text(
        ws,
        &format!(r#"{{"type":"subscribed","channel":"news","epoch":"e","offset":{offset},"recovered":{recovered}}}"#),
    )
    .await;
}

async fn publish(ws: &mut WebSocketStream<TcpStream>, offsets: std::ops::RangeInclusive<u64>) {
    for offset in offsets {
        send_text(
            ws,
            &format!(r#"{{"type":"publication","channel":"news","epoch":"e","offset":{offset},"data":{offset}}}"#),
        )
        .await;
    }
}

/// What the subscription yields until `last` is delivered.
async fn items_until(subscription: &mut belay_client::Subscription, last: u64) -> Vec<String> {
    let mut seen = Vec::new();
    tokio::time::timeout(BOUND, async {
        while let Some(item) = subscription.next().await {
            match item {
                Item::Publication(p) => {
                    seen.push(p.offset.to_string());
                    if p.offset == last {
                        return;
                    }
                }
                Item::Resync => seen.push("resync".into()),
                other => seen.push(format!("{other:?}")),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("delivery up to {last} within {BOUND:?}: {seen:?}"));
    seen
}

/// Publications 1..=5, a dropped connection, and the resume answered with
/// `lie_offset` claimed `recovered: true`, then `after` published.
async fn lying_resume(lie_offset: u64, after: std::ops::RangeInclusive<u64>) -> Vec<String> {
    let (listener, url) = listen().await;
    let last = *after.end();
    let server = tokio::spawn(async move {
        let mut ws = establish(accept(&listener).await).await;
        subscribed(&mut ws, 0, false).await;
        publish(&mut ws, 1..=5).await;
        drop(ws); // no close frame: the connection is just gone
        let mut ws = establish(accept(&listener).await).await;
        let resume = next_json(&mut ws).await.expect("the resubscribe");
        assert_eq!(resume["since"]["offset"], 5, "{resume}");
        send_text(
            &mut ws,
            &format!(r#"{{"type":"subscribed","channel":"news","epoch":"e","offset":{lie_offset},"recovered":true}}"#),
        )
        .await;
        publish(&mut ws, after).await;
        // Hold the connection until the client has read everything.
        let _ = next_json(&mut ws).await;
    });
    let client = Client::builder(url).connect().expect("a usable URL");
    let mut subscription = client.subscribe("news").await.expect("subscribe");
    let seen = items_until(&mut subscription, last).await;
    client.close().await;
    server.abort();
    seen
}

#[tokio::test]
async fn a_resume_claimed_from_a_lower_offset_delivers_nothing_twice() {
    let seen = lying_resume(2, 3..=6).await;
    assert_eq!(seen, ["1", "2", "3", "4", "5", "6"]);
}

#[tokio::test]
async fn a_resume_claimed_from_a_higher_offset_announces_the_gap() {
    let seen = lying_resume(7, 8..=8).await;
    assert_eq!(seen, ["1", "2", "3", "4", "5", "resync", "8"]);
}
