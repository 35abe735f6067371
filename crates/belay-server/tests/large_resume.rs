//! A resume with more to replay than the connection's outbound budget
//! (default 1 MiB) is answered, never closed as a slow consumer
//! (spec/PROTOCOL.md §5.7: the whole replay or `recovered: false`, never a
//! loop): 60 missed publications of 60 kB, resumed twice from the same
//! position over a real socket, with the server's default limits.

mod common;

use belay_proto::message::{ClientMessage, ServerMessage, StreamPosition, Subscribe};
use belay_server::Server;
use common::{start, Closed, Next, Raw, SOON};
use serde_json::json;

const PUBLICATIONS: u64 = 60;

/// What a resume from `since` got: `subscribed`'s `recovered` and `offset`,
/// then the offsets of the publications that followed it, up to the answer
/// to a ping sent after the `subscribed` (so everything the resume sent is
/// in).
async fn resume(raw: &mut Raw, since: StreamPosition) -> (bool, u64, Vec<u64>) {
    raw.send(&ClientMessage::Subscribe(Subscribe {
        channel: "big".into(),
        since: Some(since),
        token: None,
    }))
    .await;
    let subscribed = match raw.next_within(SOON).await {
        Next::Message(ServerMessage::Subscribed(subscribed)) => subscribed,
        other => panic!("expected subscribed, got {other:?}"),
    };
    raw.send(&ClientMessage::Ping).await;
    let mut offsets = Vec::new();
    loop {
        match raw.next_within(SOON).await {
            Next::Message(ServerMessage::Publication(p)) => offsets.push(p.offset),
            Next::Message(ServerMessage::Pong) => break,
            Next::Message(ServerMessage::Ping) => raw.send(&ClientMessage::Pong).await,
            Next::Closed(Closed::Frame(code, reason)) => {
                panic!(
                    "closed {code} {reason:?} after {} publications",
                    offsets.len()
                )
            }
            other => panic!("expected publications then pong, got {other:?}"),
        }
    }
    (subscribed.recovered, subscribed.offset, offsets)
}

/// The whole replay (`recovered`, from the position, every offset after it
/// in order) or none (`recovered: false` at the top, nothing replayed).
fn assert_answered(outcome: &(bool, u64, Vec<u64>), from: u64) {
    match outcome {
        (true, offset, offsets) => {
            assert_eq!(*offset, from);
            assert_eq!(*offsets, (from + 1..=PUBLICATIONS).collect::<Vec<_>>());
        }
        (false, offset, offsets) => {
            assert_eq!(*offset, PUBLICATIONS, "recovered: false names the top");
            assert!(offsets.is_empty(), "nothing replayed: {offsets:?}");
        }
    }
}

#[tokio::test]
async fn a_resume_past_the_outbound_budget_is_answered_the_same_each_time() {
    let server = Server::builder().build();
    let addr = start(&server).await;
    let data = "x".repeat(60_000);
    let mut epoch = String::new();
    for _ in 0..PUBLICATIONS {
        let publication = server.publish("big", json!(data)).await.expect("published");
        epoch = publication.epoch;
    }
    let since = StreamPosition { epoch, offset: 1 };
    let (mut first, _) = Raw::connected(addr, None).await;
    let answered = resume(&mut first, since.clone()).await;
    assert_answered(&answered, 1);
    let (mut second, _) = Raw::connected(addr, None).await;
    assert_eq!(resume(&mut second, since).await, answered);
}

/// Three resumes sent at once, each within half the outbound budget alone
/// (8 × 60 kB) but not all three together: each is answered whole or
/// `recovered: false`, and the connection is not closed.
#[tokio::test]
async fn resumes_sent_at_once_share_the_outbound_budget_without_a_close() {
    const EACH: u64 = 8;
    let server = Server::builder().build();
    let addr = start(&server).await;
    let data = "x".repeat(60_000);
    let channels: Vec<String> = (0..12).map(|n| format!("big.{n}")).collect();
    let mut epochs = Vec::new();
    for channel in &channels {
        for _ in 0..EACH {
            let publication = server
                .publish(channel, json!(data))
                .await
                .expect("published");
            if publication.offset == EACH {
                epochs.push(publication.epoch);
            }
        }
    }
    let (mut raw, _) = Raw::connected(addr, None).await;
    for (channel, epoch) in channels.iter().zip(&epochs) {
        raw.send(&ClientMessage::Subscribe(Subscribe {
            channel: channel.clone(),
            since: Some(StreamPosition {
                epoch: epoch.clone(),
                offset: 0,
            }),
            token: None,
        }))
        .await;
    }
    raw.send(&ClientMessage::Ping).await;
    let mut answers = std::collections::BTreeMap::new();
    let mut replayed: std::collections::BTreeMap<String, Vec<u64>> = Default::default();
    loop {
        match raw.next_within(SOON).await {
            Next::Message(ServerMessage::Subscribed(s)) => {
                answers.insert(s.channel.clone(), (s.recovered, s.offset));
            }
            Next::Message(ServerMessage::Publication(p)) => {
                assert!(answers.contains_key(&p.channel), "subscribed comes first");
                replayed.entry(p.channel).or_default().push(p.offset);
            }
            Next::Message(ServerMessage::Pong) => break,
            Next::Message(ServerMessage::Ping) => raw.send(&ClientMessage::Pong).await,
            other => panic!("expected subscribed, publications, pong; got {other:?}"),
        }
    }
    assert_eq!(answers.len(), channels.len(), "{answers:?}");
    for channel in &channels {
        let offsets = replayed.remove(channel).unwrap_or_default();
        match answers[channel.as_str()] {
            (true, offset) => {
                assert_eq!(offset, 0);
                assert_eq!(offsets, (1..=EACH).collect::<Vec<_>>(), "{channel}");
            }
            (false, offset) => {
                assert_eq!(offset, EACH, "{channel}");
                assert!(offsets.is_empty(), "{channel}: {offsets:?}");
            }
        }
    }
}
