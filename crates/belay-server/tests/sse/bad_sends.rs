//! Sends that break the mapping's rules get their documented answer, and
//! those that make the stream unusable close it with the WebSocket's code.

use std::time::Duration;

use belay_proto::message::{encode_client, ClientMessage};
use serde_json::json;

use crate::common::{self, send_to, SseRaw};
use crate::{request, result_of, server};
use belay_server::ServerConfig;

const BOUND: Duration = Duration::from_secs(5);

#[tokio::test]
async fn a_retried_send_is_answered_but_not_read_twice() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let body = encode_client(&request(1, "echo", json!(1)));
    assert_eq!(sse.send_raw(1, &body).await.status, 204);
    assert_eq!(result_of(&mut sse, 1).await, json!(1));
    // The same number again (its answer was lost, say): taken, ignored.
    let again = encode_client(&request(2, "echo", json!(2)));
    assert_eq!(sse.send_raw(1, &again).await.status, 204);
    let next = encode_client(&request(3, "echo", json!(3)));
    assert_eq!(sse.send_raw(2, &next).await.status, 204);
    // Request 2 never ran: the next reply is 3's.
    match sse.recv_message().await {
        belay_proto::message::ServerMessage::Response(r) => assert_eq!(r.id, 3),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_send_past_the_next_number_closes_the_stream_1002() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let gap = sse.send_raw(2, &encode_client(&ClientMessage::Ping)).await;
    assert_eq!(gap.status, 409, "{gap:?}");
    assert_eq!(
        sse.closed_within(BOUND).await,
        Some((1002, "protocol error".into()))
    );
}

#[tokio::test]
async fn a_send_body_over_the_frame_limit_is_413_and_closes_the_stream_1009() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let huge = "x".repeat(1_048_577);
    let refused = sse.send_raw(1, &huge).await;
    assert_eq!(refused.status, 413, "{}", refused.status);
    let (code, _) = sse.closed_within(BOUND).await.expect("a close event");
    assert_eq!(code, 1009);
}

#[tokio::test]
async fn a_send_without_a_number_is_400_and_the_stream_goes_on() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    let refused = send_to(addr, &sse.stream, None, "{}").await;
    assert_eq!(refused.status, 400, "{refused:?}");
    assert_eq!(sse.send(&[&request(1, "echo", json!(1))]).await.status, 204);
    assert_eq!(result_of(&mut sse, 1).await, json!(1));
}

#[tokio::test]
async fn a_send_to_an_unknown_stream_is_404() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let refused = send_to(addr, "AAAAAAAAAAAAAAAAAAAAAA", Some(1), "{}").await;
    assert_eq!(refused.status, 404, "{refused:?}");
    let nameless = common::http_call(addr, "POST", "/sse/send", Some("{}")).await;
    assert_eq!(nameless.status, 404, "{nameless:?}");
}

#[tokio::test]
async fn a_message_that_does_not_decode_is_answered_like_a_websocket_frame() {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut sse, _) = SseRaw::connected(addr, None).await;
    // Valid JSON of an unknown type is skipped (spec §1.3); the stream goes on.
    assert_eq!(sse.send_raw(1, r#"{"type":"hologram"}"#).await.status, 204);
    assert_eq!(sse.send_raw(2, "").await.status, 204);
    let body = encode_client(&request(1, "echo", json!(1)));
    assert_eq!(sse.send_raw(3, &body).await.status, 204);
    assert_eq!(result_of(&mut sse, 1).await, json!(1));
}
