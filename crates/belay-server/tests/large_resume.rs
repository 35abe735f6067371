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
