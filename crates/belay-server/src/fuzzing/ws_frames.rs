//! The `ws_frames` target: a byte stream through the server's WebSocket
//! codec, against a reference parser written from RFC 6455.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::ws::{Message, WebSocket};

use super::connection::client_frame;
use super::reference::{
    parse_server_frames, reference_parse, OP_BINARY, OP_CLOSE, OP_PONG, OP_TEXT,
};

/// The message limits a [`ws_frames`] input picks from (its second byte).
const MAX_PAYLOADS: [usize; 8] = [0, 125, 126, 1024, 4096, 65_535, 65_536, 1 << 20];

/// Fuzz target `ws_frames`: byte 0 picks how the rest is split into reads
/// (0: one read; otherwise pseudo-random reads of 1 to 2^(b & 7) bytes,
/// seeded by the byte), byte 1 picks `max_payload` from
/// `[0, 125, 126, 1024, 4096, 65535, 65536, 1 MiB]`, the rest is the stream.
/// Returns how many messages the codec delivered.
pub fn ws_frames(data: &[u8]) -> usize {
    let [seed, limit, stream @ ..] = data else {
        return 0;
    };
    let max_payload = MAX_PAYLOADS[usize::from(*limit) % MAX_PAYLOADS.len()];
    let chunks = split_points(*seed, stream);
    ws_stream(&chunks, max_payload)
}

/// The first two bytes of a [`ws_frames`] input that feed `stream` with
/// reads of at most 2^`split_log2` bytes (`None`: one read) and a limit of
/// `max_payload` (one of the listed values; others round to 1 MiB).
pub fn ws_frames_input(split_log2: Option<u8>, max_payload: usize, stream: &[u8]) -> Vec<u8> {
    let seed = split_log2.map_or(0, |log2| 0x40 | (log2 & 7));
    let limit = MAX_PAYLOADS
        .iter()
        .position(|&m| m == max_payload)
        .unwrap_or(MAX_PAYLOADS.len() - 1);
    let mut input = vec![seed, limit as u8];
    input.extend_from_slice(stream);
    input
}

/// A masked client frame, as a peer would send it (for seed inputs).
pub fn masked_frame(first_byte: u8, payload: &[u8]) -> Vec<u8> {
    let mut seed = u64::from(first_byte);
    client_frame(
        first_byte & 0x0f,
        first_byte & 0x80 != 0,
        payload,
        &mut seed,
    )
    .into_iter()
    .enumerate()
    .map(|(i, b)| if i == 0 { first_byte } else { b })
    .collect()
}

/// Split `stream` into reads as [`ws_frames`] describes.
fn split_points(seed: u8, stream: &[u8]) -> Vec<&[u8]> {
    if seed == 0 {
        return vec![stream];
    }
    let max_chunk = 1u64 << (seed & 7);
    let mut state = u64::from(seed);
    let mut chunks = Vec::new();
    let mut rest = stream;
    while !rest.is_empty() {
        let len = (1 + splitmix64(&mut state) % max_chunk) as usize;
        let (chunk, tail) = rest.split_at(len.min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

pub(super) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a peer's stream made the codec do, one step at a time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum WsEvent {
    Text(Vec<u8>),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong,
    Close(Option<u16>),
    /// The codec gave up, asking for this close code.
    Error(Option<u16>),
    /// The stream ended (or the peer closed).
    End,
}

/// Feed `chunks` (one read each, in order) to the server's WebSocket codec
/// with messages limited to `max_payload`, read until it ends or fails, and
/// check it against the reference parser; then check that every message
/// read encodes back to itself. Returns how many messages the codec
/// delivered. Panics if an invariant breaks.
pub fn ws_stream(chunks: &[&[u8]], max_payload: usize) -> usize {
    let whole: Vec<u8> = chunks.concat();
    let (expected_events, expected_output) = reference_parse(&whole, max_payload);
    let (events, output) = with_ws_runtime(|rt| {
        rt.block_on(async {
            let io = ScriptedIo::new(chunks);
            let written = Rc::clone(&io.written);
            let mut ws = WebSocket::new(io, &[], max_payload);
            let mut events = Vec::new();
            loop {
                match ws.next().await {
                    Some(Ok(message)) => events.push(match message {
                        Message::Text(text) => {
                            assert!(
                                std::str::from_utf8(&text).is_ok(),
                                "a text message that is not UTF-8"
                            );
                            WsEvent::Text(text.to_vec())
                        }
                        Message::Binary(bytes) => WsEvent::Binary(bytes.to_vec()),
                        Message::Ping(payload) => {
                            // As the connection does: answer it.
                            ws.queue_pong(&payload);
                            WsEvent::Ping(payload.to_vec())
                        }
                        Message::Pong => WsEvent::Pong,
                        Message::Close(code) => WsEvent::Close(code),
                    }),
                    Some(Err(error)) => {
                        events.push(WsEvent::Error(error.close_code()));
                        break;
                    }
                    None => {
                        events.push(WsEvent::End);
                        break;
                    }
                }
                assert!(events.len() <= whole.len() + 1, "more messages than bytes");
            }
            ws.flush().await.expect("the in-memory sink never fails");
            drop(ws);
            (events, written.take())
        })
    });
    for event in &events {
        if let WsEvent::Text(bytes) | WsEvent::Binary(bytes) = event {
            assert!(
                bytes.len() <= max_payload,
                "a message of {} bytes over the limit of {max_payload}",
                bytes.len()
            );
        }
    }
    assert_eq!(
        events, expected_events,
        "the codec and the reference parser disagree on the messages"
    );
    assert_eq!(
        output, expected_output,
        "the codec wrote other control frames than the reference expects"
    );
    check_encoding(&events, chunks.first().map_or(0, |c| c.len()));
    events
        .iter()
        .filter(|e| !matches!(e, WsEvent::Error(_) | WsEvent::End))
        .count()
}

/// Queue every data message (and a pong per ping) back through the codec's
/// encoder; let one write of `first_write` bytes go out, discard what has
/// not started, queue a close and flush. The bytes must parse as unmasked
/// server frames: every frame that had started, whole, then the close.
fn check_encoding(events: &[WsEvent], first_write: usize) {
    let mut queued = Vec::new();
    let (written, first) = with_ws_runtime(|rt| {
        rt.block_on(async {
            let io = ScriptedIo::new(&[]).with_writes(vec![first_write.max(1), usize::MAX]);
            let written = Rc::clone(&io.written);
            let mut ws = WebSocket::new(io, &[], 0);
            for event in events {
                match event {
                    WsEvent::Text(bytes) => {
                        ws.queue_text(bytes);
                        queued.push((OP_TEXT, bytes.clone()));
                    }
                    WsEvent::Binary(bytes) => {
                        ws.queue_binary(bytes);
                        queued.push((OP_BINARY, bytes.clone()));
                    }
                    WsEvent::Ping(bytes) => {
                        ws.queue_pong(bytes);
                        queued.push((OP_PONG, bytes.clone()));
                    }
                    _ => {}
                }
            }
            // One write, then the socket is "busy" (Pending).
            tokio::select! {
                biased;
                _ = ws.flush() => {}
                () = std::future::ready(()) => {}
            }
            let first = written.borrow().len();
            ws.discard_unsent();
            let reason = "é".repeat(100);
            ws.queue_close(Some(1000), &reason);
            ws.queue_text(b"after the close: never sent");
            ws.flush().await.expect("the in-memory sink never fails");
            drop(ws);
            (written.take(), first)
        })
    });
    let mut expected = Vec::new();
    let mut at = 0;
    for (opcode, payload) in queued {
        if at >= first {
            break;
        }
        at += encoded_len(payload.len());
        expected.push((opcode, payload));
    }
    let mut close = 1000u16.to_be_bytes().to_vec();
    // 123 bytes at most, cut on a char boundary.
    close.extend_from_slice(&"é".repeat(100).as_bytes()[..122]);
    expected.push((OP_CLOSE, close));
    let frames = parse_server_frames(&written).unwrap_or_else(|e| panic!("encoder output: {e}"));
    assert_eq!(
        frames, expected,
        "encoded frames (first write {first} bytes, then discard) do not parse back"
    );
}

/// Length of an unmasked frame with `payload` bytes.
fn encoded_len(payload: usize) -> usize {
    payload
        + match payload {
            0..=125 => 2,
            126..=65_535 => 4,
            _ => 10,
        }
}

thread_local! {
    static WS_RUNTIME: RefCell<Option<tokio::runtime::Runtime>> = const { RefCell::new(None) };
}

pub(super) fn with_ws_runtime<T>(f: impl FnOnce(&tokio::runtime::Runtime) -> T) -> T {
    WS_RUNTIME.with(|cell| {
        let mut slot = cell.borrow_mut();
        let rt = slot.get_or_insert_with(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a current-thread runtime")
        });
        f(rt)
    })
}

/// An in-memory socket: each read returns (at most) the next scripted chunk,
/// with a `Pending` between chunks; writes are accepted a chunk's length at
/// a time, every other call `Pending`, so the codec's partial-write paths
/// (and its tracking of frame boundaries across them) run.
#[derive(Debug)]
struct ScriptedIo {
    chunks: VecDeque<Vec<u8>>,
    read_pending: bool,
    write_pending: bool,
    /// How many bytes each accepted write takes, in turn.
    writes: Vec<usize>,
    next_write: usize,
    /// Everything written (shared: the codec owns the socket).
    written: Rc<RefCell<Vec<u8>>>,
}

impl ScriptedIo {
    /// Reads return `chunks`; writes take as many bytes as the chunks have,
    /// in turn (the whole buffer when there are none).
    fn new(chunks: &[&[u8]]) -> Self {
        let chunks: VecDeque<Vec<u8>> = chunks
            .iter()
            .filter(|c| !c.is_empty())
            .map(|c| c.to_vec())
            .collect();
        let mut writes: Vec<usize> = chunks.iter().map(Vec::len).collect();
        if writes.len() < 2 {
            writes = vec![usize::MAX];
        }
        ScriptedIo {
            chunks,
            read_pending: false,
            write_pending: true,
            writes,
            next_write: 0,
            written: Rc::default(),
        }
    }

    /// Writes take these many bytes, in turn (the last one repeats).
    fn with_writes(mut self, writes: Vec<usize>) -> Self {
        self.writes = writes;
        self
    }
}

impl AsyncRead for ScriptedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.read_pending {
            this.read_pending = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(mut chunk) = this.chunks.pop_front() {
            let n = chunk.len().min(buf.remaining());
            buf.put_slice(&chunk[..n]);
            if n < chunk.len() {
                chunk.drain(..n);
                this.chunks.push_front(chunk);
            }
            this.read_pending = true;
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ScriptedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.write_pending = !this.write_pending;
        if this.write_pending {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let size = this.writes[this.next_write.min(this.writes.len() - 1)];
        this.next_write = (this.next_write + 1) % this.writes.len().max(1);
        let n = buf.len().min(size.max(1));
        this.written.borrow_mut().extend_from_slice(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
