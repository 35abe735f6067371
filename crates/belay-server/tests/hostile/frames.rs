//! Every frame counts: unknown types, invalid requests, binary frames and
//! liveness frames (JSON or WebSocket pings) are all bounded, and a flood of
//! any of them is closed 4029 while a bystander is unaffected.

use futures_util::SinkExt;
use tokio_websockets::Message;

use crate::common::{self, Closed, Raw, SOON};
use crate::{echo_works, server};
use belay_server::ServerConfig;

/// Send `frame` up to `max` times as fast as the socket takes it, then
/// return how the connection ended.
async fn flood(raw: &mut Raw, frame: Message, max: usize) -> Closed {
    for _ in 0..max {
        if raw.ws.send(frame.clone()).await.is_err() {
            break;
        }
    }
    raw.closed_within(SOON).await
}

async fn flood_is_closed(frame: Message, reason: &str) {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut bystander, _) = Raw::connected(addr, None).await;
    let (mut attacker, _) = Raw::connected(addr, None).await;
    let closed = flood(&mut attacker, frame, 20_000).await;
    assert_eq!(closed, Closed::Frame(4029, reason.into()));
    echo_works(&mut bystander, 1).await;
}

#[tokio::test]
async fn a_flood_of_unknown_types_is_closed_4029() {
    flood_is_closed(Message::text(r#"{"type":"hologram"}"#), "rate limited").await;
}

#[tokio::test]
async fn a_flood_of_invalid_requests_is_closed_4029() {
    flood_is_closed(
        Message::text(r#"{"type":"request","id":1}"#),
        "rate limited",
    )
    .await;
}

#[tokio::test]
async fn a_flood_of_binary_frames_is_closed_4029() {
    flood_is_closed(Message::binary(vec![1u8, 2, 3]), "rate limited").await;
}

#[tokio::test]
async fn a_flood_of_json_pings_is_closed_4029() {
    flood_is_closed(Message::text(r#"{"type":"ping"}"#), "ping flood").await;
}

#[tokio::test]
async fn a_flood_of_websocket_pings_is_closed_4029() {
    flood_is_closed(Message::ping(&b"x"[..]), "ping flood").await;
}

#[tokio::test]
async fn pings_within_their_budget_are_answered_and_never_take_message_tokens() {
    use belay_proto::message::{ClientMessage, ServerMessage};
    let mut config = ServerConfig::default();
    config.limits.set_messages_per_sec(1.0).set_burst(1);
    let server = server(config);
    let addr = common::start(&server).await;
    let (mut raw, _) = Raw::connected(addr, None).await;
    for _ in 0..20 {
        raw.send(&ClientMessage::Ping).await;
        assert_eq!(raw.recv().await, Some(ServerMessage::Pong));
    }
    // The one message token is still there for a request.
    echo_works(&mut raw, 1).await;
}
