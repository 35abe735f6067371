//! The server's side of the binary codec (spec/PROTOCOL.md §1.8): it
//! answers the client's first Belay subprotocol, serves a binary connection
//! in binary frames, and answers a text frame there with `bad_request`.

mod common;

use belay_proto::message::{
    decode_server_binary, encode_client_binary, ClientMessage, Connect, Request, ServerMessage,
};
use common::{exchange, upgrade_request, SOON};
use futures_util::{SinkExt, StreamExt};
use serde_json::json;
use tokio::net::TcpStream;
use tokio_websockets::{ClientBuilder, Message, WebSocketStream};

fn demo_server() -> belay_server::Server {
    belay_server::Server::builder()
        .methods(belay_demo::methods())
        .build()
}

/// The `101`'s `Sec-WebSocket-Protocol` for an upgrade offering `offer`.
async fn answered(addr: std::net::SocketAddr, offer: &str) -> Option<String> {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let extra = format!("Sec-WebSocket-Protocol: {offer}\r\n");
    let response = exchange(&mut tcp, upgrade_request(addr, &extra).as_bytes())
        .await
        .expect("an answer");
    assert_eq!(response.status, 101);
    response.header("sec-websocket-protocol").map(str::to_owned)
}

#[tokio::test]
async fn the_server_answers_the_first_belay_subprotocol_in_the_clients_order() {
    let server = demo_server();
    let addr = common::start(&server).await;
    let cases = [
        ("belay.bin.1, belay.json.1", Some("belay.bin.1")),
        ("belay.json.1, belay.bin.1", Some("belay.json.1")),
        ("graphql-ws, belay.bin.1", Some("belay.bin.1")),
        ("graphql-ws", None),
        ("belay.bin.2", None),
    ];
    for (offer, want) in cases {
        assert_eq!(answered(addr, offer).await.as_deref(), want, "{offer}");
    }
}

/// A binary connection: upgraded offering `belay.bin.1`, `connect` sent.
async fn binary_session(addr: std::net::SocketAddr) -> WebSocketStream<TcpStream> {
    let mut tcp = TcpStream::connect(addr).await.expect("connect");
    let extra = "Sec-WebSocket-Protocol: belay.bin.1\r\n";
    let response = exchange(&mut tcp, upgrade_request(addr, extra).as_bytes())
        .await
        .expect("an answer");
    assert_eq!(
        response.header("sec-websocket-protocol"),
        Some("belay.bin.1")
    );
    let mut ws = ClientBuilder::new().take_over(tcp);
    let connect = ClientMessage::Connect(Connect {
        protocol: 1,
        token: None,
        session: None,
    });
    send(&mut ws, &connect).await;
    ws
}

async fn send(ws: &mut WebSocketStream<TcpStream>, message: &ClientMessage) {
    let frame = Message::binary(encode_client_binary(message));
    ws.send(frame).await.expect("send");
}

/// The next server message, which must come in a binary frame.
async fn recv(ws: &mut WebSocketStream<TcpStream>) -> ServerMessage {
    let message = tokio::time::timeout(SOON, ws.next())
        .await
        .expect("a frame in time")
        .expect("open")
        .expect("a frame");
    assert!(message.is_binary(), "{message:?}");
    decode_server_binary(message.as_payload()).expect("a binary server message")
}

#[tokio::test]
async fn a_binary_connection_is_served_in_binary_frames() {
    let server = demo_server();
    let addr = common::start(&server).await;
    let mut ws = binary_session(addr).await;
    assert!(matches!(recv(&mut ws).await, ServerMessage::Welcome(_)));
    let request = ClientMessage::Request(Request {
        id: 1,
        method: "echo".into(),
        params: json!({"n": 1}),
        idem: None,
        timeout_ms: Some(5_000),
    });
    send(&mut ws, &request).await;
    match recv(&mut ws).await {
        ServerMessage::Response(r) => {
            assert_eq!(r.id, 1);
            assert!(
                matches!(r.reply, belay_proto::message::Reply::Result(v) if v.get() == r#"{"n":1}"#)
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_text_frame_on_a_binary_connection_is_answered_bad_request() {
    let server = demo_server();
    let addr = common::start(&server).await;
    let mut ws = binary_session(addr).await;
    assert!(matches!(recv(&mut ws).await, ServerMessage::Welcome(_)));
    ws.send(Message::text(r#"{"type":"ping"}"#.to_owned()))
        .await
        .expect("send");
    match recv(&mut ws).await {
        ServerMessage::Error(e) => assert_eq!(
            (e.code.as_str(), e.message.as_str()),
            (
                "bad_request",
                "text frames are not supported on a binary connection"
            )
        ),
        other => panic!("{other:?}"),
    }
    // The connection stays: a binary ping is answered.
    send(&mut ws, &ClientMessage::Ping).await;
    assert_eq!(recv(&mut ws).await, ServerMessage::Pong);
}
