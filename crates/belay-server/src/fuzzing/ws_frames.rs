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
enum WsEvent {
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

pub(super) const OP_CONTINUATION: u8 = 0x0;
pub(super) const OP_TEXT: u8 = 0x1;
pub(super) const OP_BINARY: u8 = 0x2;
pub(super) const OP_CLOSE: u8 = 0x8;
pub(super) const OP_PING: u8 = 0x9;
pub(super) const OP_PONG: u8 = 0xA;

/// A message being reassembled by the reference parser.
struct RefPartial {
    binary: bool,
    payload: Vec<u8>,
}

/// Whether `bytes` is UTF-8 or a prefix of some UTF-8 text.
fn utf8_prefix(bytes: &[u8]) -> bool {
    match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(e) => e.error_len().is_none(),
    }
}

/// The reference: parse the whole stream at once, straight from RFC 6455
/// and the codec's documented rules, and return the events the codec must
/// produce and the bytes it must write (a pong per ping, a close echo).
///
/// Where two rules apply to one frame, the first check in the frame's order
/// wins: header bits, opcode, mask, length encoding, control-frame limits,
/// then the message size (counting a fragmented message already buffered,
/// even when this frame is a new data frame that is itself an error), then
/// the payload.
fn reference_parse(stream: &[u8], max_payload: usize) -> (Vec<WsEvent>, Vec<u8>) {
    let mut events = Vec::new();
    let mut output = Vec::new();
    let mut partial: Option<RefPartial> = None;
    let mut rest = stream;
    let protocol = |events: &mut Vec<WsEvent>, code| events.push(WsEvent::Error(Some(code)));
    loop {
        if rest.len() < 2 {
            events.push(WsEvent::End);
            break;
        }
        let (b0, b1) = (rest[0], rest[1]);
        let fin = b0 >> 7 == 1;
        let opcode = b0 & 0x0f;
        if (b0 >> 4) & 0x7 != 0
            || !matches!(
                opcode,
                OP_CONTINUATION | OP_TEXT | OP_BINARY | OP_CLOSE | OP_PING | OP_PONG
            )
            || b1 >> 7 != 1
        {
            protocol(&mut events, 1002);
            break;
        }
        let (len, header) = match b1 & 0x7f {
            126 if rest.len() >= 4 => (u64::from(u16::from_be_bytes([rest[2], rest[3]])), 4),
            127 if rest.len() >= 10 => {
                let mut be = [0u8; 8];
                be.copy_from_slice(&rest[2..10]);
                (u64::from_be_bytes(be), 10)
            }
            126 | 127 => {
                events.push(WsEvent::End);
                break;
            }
            n => (u64::from(n), 2),
        };
        if len > i64::MAX as u64 {
            protocol(&mut events, 1002);
            break;
        }
        let control = opcode >= OP_CLOSE;
        if control && (!fin || len > 125) {
            protocol(&mut events, 1002);
            break;
        }
        let buffered = partial.as_ref().map_or(0, |p| p.payload.len() as u64);
        if !control && buffered + len > max_payload as u64 {
            events.push(WsEvent::Error(Some(1009)));
            break;
        }
        let len = len as usize;
        if rest.len() < header + 4 + len {
            events.push(WsEvent::End);
            break;
        }
        let mask = &rest[header..header + 4];
        let payload: Vec<u8> = rest[header + 4..header + 4 + len]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ mask[i % 4])
            .collect();
        rest = &rest[header + 4 + len..];
        match opcode {
            OP_TEXT | OP_BINARY | OP_CONTINUATION => {
                let mut message = match (opcode, partial.take()) {
                    (OP_CONTINUATION, None) | (OP_TEXT | OP_BINARY, Some(_)) => {
                        protocol(&mut events, 1002);
                        break;
                    }
                    (_, Some(mut p)) => {
                        p.payload.extend_from_slice(&payload);
                        p
                    }
                    (_, None) => RefPartial {
                        binary: opcode == OP_BINARY,
                        payload,
                    },
                };
                if !message.binary && !utf8_prefix(&message.payload) {
                    events.push(WsEvent::Error(Some(1007)));
                    break;
                }
                if !fin {
                    partial = Some(message);
                    continue;
                }
                if message.binary {
                    events.push(WsEvent::Binary(std::mem::take(&mut message.payload)));
                } else if std::str::from_utf8(&message.payload).is_ok() {
                    events.push(WsEvent::Text(std::mem::take(&mut message.payload)));
                } else {
                    events.push(WsEvent::Error(Some(1007)));
                    break;
                }
            }
            OP_PING => {
                output.push(0x80 | OP_PONG);
                output.push(payload.len() as u8);
                output.extend_from_slice(&payload);
                events.push(WsEvent::Ping(payload));
            }
            OP_PONG => events.push(WsEvent::Pong),
            _ => {
                let code = match payload.len() {
                    0 => None,
                    1 => {
                        protocol(&mut events, 1002);
                        break;
                    }
                    _ => {
                        let code = u16::from_be_bytes([payload[0], payload[1]]);
                        let valid = matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999);
                        if !valid {
                            protocol(&mut events, 1002);
                            break;
                        }
                        if std::str::from_utf8(&payload[2..]).is_err() {
                            events.push(WsEvent::Error(Some(1007)));
                            break;
                        }
                        Some(code)
                    }
                };
                output.push(0x80 | OP_CLOSE);
                match code {
                    Some(code) => {
                        output.push(2);
                        output.extend_from_slice(&code.to_be_bytes());
                    }
                    None => output.push(0),
                }
                events.push(WsEvent::Close(code));
                events.push(WsEvent::End);
                break;
            }
        }
    }
    (events, output)
}

/// Parse what a server wrote: complete, final, unmasked frames without RSV
/// bits, lengths in their shortest encoding; returns `(opcode, payload)`.
pub(super) fn parse_server_frames(mut bytes: &[u8]) -> Result<Vec<(u8, Vec<u8>)>, String> {
    let mut frames = Vec::new();
    while !bytes.is_empty() {
        if bytes.len() < 2 {
            return Err(format!("a truncated frame header {bytes:x?}"));
        }
        let (b0, b1) = (bytes[0], bytes[1]);
        if b0 & 0xf0 != 0x80 {
            return Err(format!("first byte {b0:#x}: not final, or RSV bits set"));
        }
        if b1 & 0x80 != 0 {
            return Err("a masked server frame".into());
        }
        let (len, header) = match b1 & 0x7f {
            126 => {
                let b = bytes.get(2..4).ok_or("truncated 16-bit length")?;
                let len = usize::from(u16::from_be_bytes([b[0], b[1]]));
                if len < 126 {
                    return Err(format!("length {len} not in its shortest form"));
                }
                (len, 4)
            }
            127 => {
                let b = bytes.get(2..10).ok_or("truncated 64-bit length")?;
                let mut be = [0u8; 8];
                be.copy_from_slice(b);
                let len = u64::from_be_bytes(be);
                if len <= 0xffff || len >> 63 != 0 {
                    return Err(format!("length {len} not in its shortest form"));
                }
                (
                    usize::try_from(len).map_err(|_| "length beyond memory")?,
                    10,
                )
            }
            n => (usize::from(n), 2),
        };
        let payload = bytes
            .get(header..header + len)
            .ok_or_else(|| format!("a truncated payload: {len} bytes announced"))?;
        frames.push((b0 & 0x0f, payload.to_vec()));
        bytes = &bytes[header + len..];
    }
    Ok(frames)
}
