//! Tests of `ws` over an in-memory socket (the pure parts are tested in
//! their own files, on byte slices).

use std::future::poll_fn;
use std::time::Duration;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

use super::masked::masked;

async fn pair(max: usize) -> (WebSocket<tokio::io::DuplexStream>, tokio::io::DuplexStream) {
    let (a, b) = tokio::io::duplex(1 << 20);
    (WebSocket::new(a, &[], max), b)
}

#[tokio::test]
async fn text_fragments_pings_and_close() {
    let (mut ws, mut peer) = pair(1024).await;
    let mut input = masked(0x01, "héllo ".as_bytes());
    input.extend(masked(0x89, b"p"));
    input.extend(masked(0x80, "wörld".as_bytes()));
    input.extend(masked(0x82, &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    input.extend(masked(0x88, &[0x03, 0xe8, b'o', b'k']));
    peer.write_all(&input).await.unwrap();
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        Message::Ping(Bytes::from_static(b"p"))
    );
    ws.queue_pong(b"p");
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        Message::Text(Bytes::from("héllo wörld"))
    );
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        Message::Binary(Bytes::from_static(&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]))
    );
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        Message::Close(Some(1000))
    );
    assert!(ws.next().await.is_none());
    ws.close(None, "", Duration::from_secs(1)).await;
    let mut echoed = Vec::new();
    peer.read_to_end(&mut echoed).await.unwrap();
    assert_eq!(echoed, [0x8a, 1, b'p', 0x88, 2, 0x03, 0xe8]);
}

#[tokio::test]
async fn rule_breakers_get_their_close_codes() {
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (vec![0x81, 0x00], 1002),                  // unmasked
        (masked(0xC1, b"x"), 1002),                // RSV1
        (masked(0x83, b"x"), 1002),                // reserved opcode
        (masked(0x09, b"x"), 1002),                // fragmented ping
        (masked(0x80, b"x"), 1002),                // continuation of nothing
        (masked(0x89, &[0; 126]), 1002),           // long control frame
        (masked(0x81, &[0xff]), 1007),             // invalid UTF-8
        (masked(0x01, &[0xce, 0xba, 0xff]), 1007), // fails before the end
        (masked(0x88, &[0x03]), 1002),             // one-byte close
        (masked(0x88, &[0x03, 0xed]), 1002),       // close code 1005
        (masked(0x88, &[0x03, 0xe8, 0xff]), 1007), // invalid reason
        (masked(0x82, &[0; 2000]), 1009),          // over the limit
    ];
    for (input, code) in cases {
        let (mut ws, mut peer) = pair(1024).await;
        peer.write_all(&input).await.unwrap();
        let error = ws.next().await.unwrap().unwrap_err();
        assert_eq!(error.close_code(), Some(code), "{input:x?}: {error}");
    }
}

#[tokio::test]
async fn a_message_over_the_limit_in_fragments_is_too_big() {
    let (mut ws, mut peer) = pair(100).await;
    let mut input = masked(0x02, &[0; 60]);
    input.extend(masked(0x80, &[0; 60]));
    peer.write_all(&input).await.unwrap();
    assert_eq!(
        ws.next().await.unwrap().unwrap_err().close_code(),
        Some(1009)
    );
}

#[tokio::test]
async fn frames_split_anywhere_reassemble_and_buffers_are_released() {
    let (mut ws, mut peer) = pair(1 << 20).await;
    let big = vec![b'a'; 70_000];
    let input = masked(0x81, &big);
    for chunk in input.chunks(997) {
        peer.write_all(chunk).await.unwrap();
    }
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        Message::Text(Bytes::from(big.clone()))
    );
    assert_eq!(ws.read.capacity(), 0);
    ws.queue_text(&big);
    ws.flush().await.unwrap();
    assert_eq!(ws.write.capacity(), 0);
    let mut head = [0; 10];
    peer.read_exact(&mut head).await.unwrap();
    assert_eq!(head[..2], [0x81, 127]);
    assert_eq!(u64::from_be_bytes(head[2..].try_into().unwrap()), 70_000);
}

#[tokio::test]
async fn a_full_write_buffer_reports_room_once_it_drains() {
    let (a, mut peer) = tokio::io::duplex(4096);
    let mut ws = WebSocket::new(a, &[], 1024);
    ws.queue_binary(&vec![7; HIGH_WATER + 10]);
    let reader = tokio::spawn(async move {
        let mut sink = vec![0; 1024];
        let mut total = 0;
        while total < HIGH_WATER + 14 {
            total += peer.read(&mut sink).await.unwrap();
        }
        peer
    });
    assert!(matches!(poll_fn(|cx| ws.poll_event(cx)).await, Event::Room));
    assert!(ws.buffered() < HIGH_WATER);
    ws.flush().await.unwrap();
    assert_eq!(ws.buffered(), 0);
    drop(reader.await.unwrap());
}

#[test]
fn discarding_keeps_only_the_rest_of_a_frame_already_started() {
    let (a, _b) = tokio::io::duplex(16);
    let mut ws = WebSocket::new(a, &[], 1024);
    ws.queue_text(&[b'a'; 3]); // 5 bytes
    ws.queue_text(&[b'b'; 200]); // 4 + 200 bytes
    ws.queue_text(&[b'c'; 1]); // 3 bytes
                               // Six bytes are out: 203 of the second frame are left.
    ws.head_left = 203;
    ws.write.advance(6);
    ws.discard_unsent();
    assert_eq!(ws.buffered(), 203);
}
