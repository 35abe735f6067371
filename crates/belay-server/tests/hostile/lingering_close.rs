//! A peer that breaks the frame limit learns why: the server sends its
//! close frame, stops writing and reads (and discards) what the peer is
//! still sending for a bounded time, so the peer's unread bytes do not turn
//! the close into a reset that destroys the close frame (nginx's lingering
//! close). Each test writes all its bytes before it reads anything, as a
//! misbehaving client does.

use std::net::SocketAddr;

use belay_proto::message::{encode_client, ClientMessage, Connect};
use belay_server::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

use crate::common::{self, exchange, upgrade_request, Raw, SOON};
use crate::{echo_works, server};

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_CLOSE: u8 = 0x8;

/// One client frame with an all-zero mask (valid, and the payload goes out
/// as is).
fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(if fin { 0x80 } else { 0 } | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if let Ok(short) = u16::try_from(len) {
        out.push(0x80 | 126);
        out.extend_from_slice(&short.to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(payload);
    out
}

fn connect_frame(token: Option<String>) -> Vec<u8> {
    let connect = encode_client(&ClientMessage::Connect(Connect {
        protocol: 1,
        token,
        session: None,
    }));
    frame(true, OP_TEXT, connect.as_bytes())
}

/// How the server's side of the connection ended, as the client read it.
#[derive(Debug, PartialEq, Eq)]
enum Ending {
    /// A close frame with this code, then a clean end of stream.
    CloseThenEnd(u16),
    /// A close frame with this code, then an error (a reset) or more bytes.
    CloseThen(u16, String),
    /// A failed write, an end of stream or a reset before any close frame.
    Lost(String),
}

/// Upgrade, write `bytes` (through a small send buffer, so the write ends
/// only if the server reads them), then read server frames until a close
/// frame, and what follows it.
async fn send_and_read_close(addr: SocketAddr, bytes: Vec<u8>) -> Ending {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .set_send_buffer_size(16 * 1024)
        .expect("a small send buffer");
    let mut tcp = socket.connect(addr).await.expect("connect");
    let head = exchange(&mut tcp, upgrade_request(addr, "").as_bytes())
        .await
        .expect("the upgrade is answered");
    assert_eq!(head.status, 101, "{head:?}");
    tokio::time::timeout(SOON, async {
        // All at once, then read: a client that writes its message before
        // it looks at what came back.
        if let Err(e) = tcp.write_all(&bytes).await {
            return Ending::Lost(format!("write: {e}"));
        }
        let mut buf: Vec<u8> = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some((opcode, payload, used)) = server_frame(&buf) {
                buf.drain(..used);
                if opcode != OP_CLOSE {
                    continue;
                }
                let code = payload
                    .get(..2)
                    .map_or(1005, |c| u16::from_be_bytes([c[0], c[1]]));
                return match (buf.is_empty(), tcp.read(&mut chunk).await) {
                    (true, Ok(0)) => Ending::CloseThenEnd(code),
                    (_, Ok(n)) => Ending::CloseThen(code, format!("{n} more bytes")),
                    (_, Err(e)) => Ending::CloseThen(code, e.to_string()),
                };
            }
            match tcp.read(&mut chunk).await {
                Ok(0) => return Ending::Lost("end of stream".into()),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) => return Ending::Lost(e.to_string()),
            }
        }
    })
    .await
    .expect("the connection ends within the bound")
}

/// The first server frame in `buf`: opcode, payload, bytes used.
fn server_frame(buf: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    let opcode = buf.first()? & 0x0f;
    let (len, at): (usize, usize) = match buf.get(1)? & 0x7f {
        126 => (
            usize::from(u16::from_be_bytes([*buf.get(2)?, *buf.get(3)?])),
            4,
        ),
        127 => {
            let b = buf.get(2..10)?;
            (
                usize::try_from(u64::from_be_bytes(b.try_into().ok()?)).ok()?,
                10,
            )
        }
        n => (usize::from(n), 2),
    };
    let payload = buf.get(at..at.checked_add(len)?)?;
    Some((opcode, payload.to_vec(), at + len))
}

async fn is_closed_1009(bytes: Vec<u8>) {
    let server = server(ServerConfig::default());
    let addr = common::start(&server).await;
    let (mut bystander, _) = Raw::connected(addr, None).await;
    assert_eq!(
        send_and_read_close(addr, bytes).await,
        Ending::CloseThenEnd(1009)
    );
    echo_works(&mut bystander, 1).await;
}

#[tokio::test]
async fn a_text_frame_one_byte_over_64_kib_reads_close_1009() {
    let mut bytes = connect_frame(None);
    bytes.extend(frame(true, OP_TEXT, &vec![b' '; 64 * 1024 + 1]));
    is_closed_1009(bytes).await;
}

#[tokio::test]
async fn seventy_thousand_fragments_past_64_kib_read_close_1009() {
    let mut bytes = connect_frame(None);
    // A first fragment of exactly the limit, then 70,000 past it.
    bytes.extend(frame(false, OP_TEXT, &vec![b' '; 64 * 1024]));
    for _ in 1..70_000 {
        bytes.extend(frame(false, OP_CONTINUATION, b" "));
    }
    bytes.extend(frame(true, OP_CONTINUATION, b" "));
    is_closed_1009(bytes).await;
}

#[tokio::test]
async fn a_2_mib_frame_reads_close_1009() {
    let mut bytes = connect_frame(None);
    bytes.extend(frame(true, OP_TEXT, &vec![b' '; 2 << 20]));
    is_closed_1009(bytes).await;
}

#[tokio::test]
async fn a_connect_with_a_1_mib_token_reads_close_1009() {
    is_closed_1009(connect_frame(Some("t".repeat(1 << 20)))).await;
}
