//! A scripted server written in the test: a TCP listener on 127.0.0.1 port
//! 0 whose every connection does what the test says (refuse the upgrade with
//! a status and headers, accept it and speak a little of the protocol, send
//! raw bytes). Also used by belay-cli's tests (included by path).
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_websockets::{Message, ServerBuilder, WebSocketStream};

/// A generous bound for anything that should happen "soon".
pub const BOUND: Duration = Duration::from_secs(10);

/// The `welcome` the scripted server sends (no server pings).
pub const WELCOME: &str = r#"{"type":"welcome","session":"scripted-1","protocol":1}"#;

/// A listener on a loopback port of the OS's choosing, and its `ws://` URL.
pub async fn listen() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr: SocketAddr = listener.local_addr().expect("addr");
    (listener, format!("ws://{addr}/ws"))
}

/// The next connection, within the bound.
pub async fn accept(listener: &TcpListener) -> TcpStream {
    tokio::time::timeout(BOUND, listener.accept())
        .await
        .expect("a dial within the bound")
        .expect("accept")
        .0
}

/// Read an HTTP request head (up to the blank line), within the bound.
pub async fn read_head(tcp: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    tokio::time::timeout(BOUND, async {
        while !head.ends_with(b"\r\n\r\n") {
            match tcp.read(&mut byte).await {
                Ok(1) => head.push(byte[0]),
                _ => break,
            }
            assert!(head.len() < 64 * 1024, "request head too long");
        }
    })
    .await
    .expect("a request head within the bound");
    String::from_utf8_lossy(&head).into_owned()
}

/// Answer the upgrade request with a non-101 `status` and extra header
/// lines (each `Name: value`), then close.
pub async fn refuse(mut tcp: TcpStream, status: &str, headers: &[&str]) {
    let _ = read_head(&mut tcp).await;
    let mut response = format!("HTTP/1.1 {status}\r\n");
    for header in headers {
        response.push_str(header);
        response.push_str("\r\n");
    }
    response.push_str("Content-Length: 0\r\nConnection: close\r\n\r\n");
    let _ = tcp.write_all(response.as_bytes()).await;
    let _ = tcp.shutdown().await;
}

/// Accept the upgrade (tokio-websockets' server handshake).
pub async fn upgrade(tcp: TcpStream) -> WebSocketStream<TcpStream> {
    tokio::time::timeout(BOUND, ServerBuilder::new().accept(tcp))
        .await
        .expect("an upgrade within the bound")
        .expect("a valid upgrade request")
        .1
}

/// The next text frame as JSON (`None` once the client closed or went away).
pub async fn next_json(ws: &mut WebSocketStream<TcpStream>) -> Option<Value> {
    loop {
        let message = tokio::time::timeout(BOUND, ws.next())
            .await
            .expect("a frame within the bound")?
            .ok()?;
        if message.is_close() {
            return None;
        }
        if let Some(text) = message.as_text() {
            return Some(serde_json::from_str(text).expect("the client sends JSON"));
        }
    }
}

/// Send a text frame.
pub async fn send_text(ws: &mut WebSocketStream<TcpStream>, text: &str) {
    ws.send(Message::text(text.to_owned())).await.expect("send");
}

/// Upgrade, read `connect`, send `welcome`.
pub async fn establish(tcp: TcpStream) -> WebSocketStream<TcpStream> {
    let mut ws = upgrade(tcp).await;
    let connect = next_json(&mut ws).await.expect("a connect frame");
    assert_eq!(connect["type"], "connect", "{connect}");
    send_text(&mut ws, WELCOME).await;
    ws
}

/// Serve an established session: every request is answered with its own
/// params as the result (but those of the method `hang`), pings with pongs.
/// Returns every frame received, once the client closes or goes away.
pub async fn echo_until_closed(ws: &mut WebSocketStream<TcpStream>) -> Vec<Value> {
    let mut received = Vec::new();
    while let Some(frame) = next_json_unbounded(ws).await {
        match frame["type"].as_str() {
            Some("request") if frame["method"] != "hang" => {
                let reply =
                    json!({"type": "response", "id": frame["id"], "result": frame["params"]});
                send_text(ws, &reply.to_string()).await;
            }
            Some("ping") => send_text(ws, r#"{"type":"pong"}"#).await,
            _ => {}
        }
        received.push(frame);
    }
    received
}

async fn next_json_unbounded(ws: &mut WebSocketStream<TcpStream>) -> Option<Value> {
    loop {
        let message = ws.next().await?.ok()?;
        if message.is_close() {
            return None;
        }
        if let Some(text) = message.as_text() {
            return serde_json::from_str(text).ok();
        }
    }
}

/// Close the WebSocket with `code` and `reason`, then wait (bounded) for
/// the client's answer.
pub async fn close_with(mut ws: WebSocketStream<TcpStream>, code: u16, reason: &str) {
    let code = tokio_websockets::CloseCode::try_from(code).expect("a valid close code");
    let _ = ws.send(Message::close(Some(code), reason)).await;
    let _ = tokio::time::timeout(BOUND, async { while let Some(Ok(_)) = ws.next().await {} }).await;
}

/// The header of an unmasked server text frame announcing `len` bytes.
pub fn text_frame_header(len: u64) -> Vec<u8> {
    frame_header(0x81, len)
}

/// The header of an unmasked server frame: `first` is FIN and the opcode
/// (0x01 a first text fragment, 0x80 the final continuation).
pub fn frame_header(first: u8, len: u64) -> Vec<u8> {
    let mut header = vec![first];
    match len {
        0..=125 => header.push(len as u8),
        126..=0xFFFF => {
            header.push(126);
            header.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            header.push(127);
            header.extend_from_slice(&len.to_be_bytes());
        }
    }
    header
}

/// Read one (masked, client) frame from a raw stream: its opcode and
/// unmasked payload. `None` at the end of the stream.
pub async fn read_client_frame(tcp: &mut (impl AsyncReadExt + Unpin)) -> Option<(u8, Vec<u8>)> {
    let mut head = [0u8; 2];
    tcp.read_exact(&mut head).await.ok()?;
    let opcode = head[0] & 0x0F;
    let len = match head[1] & 0x7F {
        126 => u64::from(tcp.read_u16().await.ok()?),
        127 => tcp.read_u64().await.ok()?,
        n => u64::from(n),
    };
    assert!(
        len <= 1 << 20,
        "client frames stay small here ({len} bytes)"
    );
    let mut mask = [0u8; 4];
    if head[1] & 0x80 != 0 {
        tcp.read_exact(&mut mask).await.ok()?;
    }
    let mut payload = vec![0u8; len as usize];
    tcp.read_exact(&mut payload).await.ok()?;
    for (i, byte) in payload.iter_mut().enumerate() {
        *byte ^= mask[i % 4];
    }
    Some((opcode, payload))
}
