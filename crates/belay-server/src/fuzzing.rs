//! What the fuzz targets (`fuzz/`) and the corpus replay test
//! (`tests/fuzz_corpus_replay.rs`) call: the server's WebSocket codec, the
//! connection driver and the protocol codec, each with the invariants a run
//! must keep. Behind the `fuzzing` feature; not part of the public API.
//!
//! * [`ws_frames`] / [`ws_stream`]: a byte stream, split into reads at given
//!   points, through the server's WebSocket codec. The codec's messages, its
//!   verdict (the close code of the first error) and the bytes it writes
//!   (pongs, the close echo) must equal those of an independent whole-stream
//!   reference parser written from RFC 6455 and the rules in `ws.rs`
//!   — whatever the split points. Every text message is UTF-8, no message is
//!   longer than `max_payload`, and what the codec encodes parses back.
//! * [`client_decode`]: any text through `decode_client` and `decode_server`:
//!   nothing panics, and what decodes re-encodes to an equal message.
//! * [`connection()`]: one whole session, driven by the same
//!   `connection::run` the `/ws` upgrade calls, over an in-memory stream,
//!   fed a sequence of [`FuzzFrame`]s (well-formed protocol messages with
//!   arbitrary fields, raw text, binary, control frames, fragments, raw
//!   bytes, publications). The session must end within a bound once the
//!   client closes; every frame the server writes must be a well-formed
//!   unmasked server frame: a text frame that `decode_server` accepts, a
//!   pong, or one final close with a valid code; the connection must be
//!   unregistered afterwards.
//!
//! Inputs that make a run fail are bugs; the functions panic with a message
//! saying which invariant broke.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use belay_proto::fuzzing::unparse::{variant, Unparse};

use arbitrary::{Arbitrary, Unstructured};
use belay_proto::message::{
    decode_client, decode_server, encode_client, encode_server, Reply, ServerMessage,
};
use belay_proto::server::Limits;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::connection::{self, Admission, ConnectionMeta};
use crate::ws::{Message, WebSocket};
use crate::{Server, ServerConfig};

// ---------------------------------------------------------------------------
// WebSocket frame parser
// ---------------------------------------------------------------------------

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

fn splitmix64(state: &mut u64) -> u64 {
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

fn with_ws_runtime<T>(f: impl FnOnce(&tokio::runtime::Runtime) -> T) -> T {
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

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

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
fn parse_server_frames(mut bytes: &[u8]) -> Result<Vec<(u8, Vec<u8>)>, String> {
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

// ---------------------------------------------------------------------------
// Client-message decoder
// ---------------------------------------------------------------------------

/// Fuzz target `client_decode`: `data` (if UTF-8) through `decode_client`
/// and `decode_server`. Neither panics; whatever decodes encodes to a frame
/// that decodes to an equal message, and re-encoding that gives the same
/// text again. Floats included: serde_json's `float_roundtrip` feature reads
/// every decimal number to the nearest double (docs/FUZZING.md, finding 2).
pub fn client_decode(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(message) = decode_client(text) {
        let encoded = encode_client(&message);
        let again = decode_client(&encoded)
            .unwrap_or_else(|e| panic!("{encoded:?}, encoded from {text:?}, fails: {e}"));
        assert_same(&again, &message, text);
        let stable = encode_client(&again);
        let third = decode_client(&stable).expect("a re-encoded message decodes");
        assert_same(&third, &again, &encoded);
    }
    if let Ok(message) = decode_server(text) {
        let encoded = encode_server(&message);
        let again = decode_server(&encoded)
            .unwrap_or_else(|e| panic!("{encoded:?}, encoded from {text:?}, fails: {e}"));
        assert_same(&again, &message, text);
        let stable = encode_server(&again);
        let third = decode_server(&stable).expect("a re-encoded message decodes");
        assert_same(&third, &again, &encoded);
    }
}

/// `again` (decoded from the encoding of `first`) equals `first`.
fn assert_same<T: PartialEq + std::fmt::Debug>(again: &T, first: &T, text: &str) {
    assert!(
        again == first,
        "{text:?} does not survive encoding: {again:?} != {first:?}"
    );
}

// ---------------------------------------------------------------------------
// The connection path
// ---------------------------------------------------------------------------

/// Text taken from the input as a little-endian `u16` length followed by
/// that many bytes (fewer if the input ends), invalid UTF-8 replaced. Unlike
/// `String`'s own `Arbitrary` (which takes its length from the end of the
/// input), this can be written back ([`encode_frames`]), so seed inputs can
/// be made from the tests' messages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuzzStr(pub String);

impl<'a> Arbitrary<'a> for FuzzStr {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let bytes = FuzzBytes::arbitrary(u)?;
        Ok(FuzzStr(String::from_utf8_lossy(&bytes.0).into_owned()))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (2, None)
    }
}

/// Bytes taken from the input like [`FuzzStr`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FuzzBytes(pub Vec<u8>);

impl<'a> Arbitrary<'a> for FuzzBytes {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let len = usize::from(u16::arbitrary(u)?).min(u.len());
        Ok(FuzzBytes(u.bytes(len)?.to_vec()))
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (2, None)
    }
}

/// A method to call: one of [`fuzz_methods`], or any other name.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzMethod {
    /// `echo`: answers its params.
    Echo,
    /// `order.create`: idempotent with a key.
    OrderCreate,
    /// `slow`: sleeps `params` ms.
    Slow,
    /// Any other name (normally `not_found`).
    Other(FuzzStr),
}

/// Request params.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzParams {
    /// Absent (`null`).
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// A small number (what `slow` wants).
    Millis(u8),
    /// A string.
    Str(FuzzStr),
    /// An object `{"item": ..., "n": ...}`.
    Object(FuzzStr, u32),
    /// Raw JSON text, used as the params if it parses (else a string).
    Json(FuzzStr),
}

impl FuzzParams {
    fn value(&self) -> Value {
        match self {
            FuzzParams::Null => Value::Null,
            FuzzParams::Bool(b) => json!(b),
            FuzzParams::Int(n) => json!(n),
            FuzzParams::Millis(ms) => json!(ms),
            FuzzParams::Str(s) => json!(s.0),
            FuzzParams::Object(item, n) => json!({ "item": item.0, "n": n }),
            FuzzParams::Json(text) => {
                serde_json::from_str(&text.0).unwrap_or_else(|_| json!(text.0))
            }
        }
    }
}

/// A channel name: two the sequence can share, or any other.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzChannel {
    /// `news`.
    News,
    /// `feed`.
    Feed,
    /// Any name.
    Other(FuzzStr),
}

impl FuzzChannel {
    fn name(&self) -> &str {
        match self {
            FuzzChannel::News => "news",
            FuzzChannel::Feed => "feed",
            FuzzChannel::Other(name) => &name.0,
        }
    }
}

/// The epoch of a `subscribe`'s `since`.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzEpoch {
    /// The channel's epoch as of the last [`FuzzFrame::Publish`] on it in
    /// this sequence (an empty string before any).
    Current,
    /// Any string.
    Other(FuzzStr),
}

/// An idempotency key: two the sequence can repeat, or any other.
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzKey {
    /// `k1`.
    K1,
    /// `k2`.
    K2,
    /// Any key.
    Other(FuzzStr),
}

impl FuzzKey {
    fn key(&self) -> String {
        match self {
            FuzzKey::K1 => "k1".into(),
            FuzzKey::K2 => "k2".into(),
            FuzzKey::Other(key) => key.0.clone(),
        }
    }
}

/// One step of a client session, as the `connection` target's input
/// (a `Vec<FuzzFrame>` through `Arbitrary::arbitrary_take_rest`).
#[derive(Debug, Clone, PartialEq, Eq, Arbitrary)]
pub enum FuzzFrame {
    /// A text frame with exactly this content.
    Text(FuzzStr),
    /// `connect` (protocol 1 is the one the server speaks).
    Connect {
        /// Protocol version.
        protocol: u8,
        /// Credentials.
        token: Option<FuzzStr>,
        /// Previous session id.
        session: Option<FuzzStr>,
    },
    /// `request`.
    Request {
        /// Request id.
        id: u64,
        /// Method.
        method: FuzzMethod,
        /// Params.
        params: FuzzParams,
        /// Idempotency key.
        idem: Option<FuzzKey>,
        /// Client deadline.
        timeout_ms: Option<u16>,
    },
    /// `subscribe`, perhaps resuming.
    Subscribe {
        /// Channel.
        channel: FuzzChannel,
        /// Resume after this position.
        since: Option<(FuzzEpoch, u16)>,
    },
    /// `unsubscribe`.
    Unsubscribe(FuzzChannel),
    /// Protocol-level `ping`.
    Ping,
    /// Protocol-level `pong`.
    Pong,
    /// A text message of about `len` bytes: a `ping` padded with a long
    /// field (frames with 16- and 64-bit lengths, the size limit).
    Padded(u16),
    /// A text message in `pieces` fragments (cut anywhere, even inside a
    /// UTF-8 sequence), with a WebSocket ping after the first if `ping`.
    Fragmented {
        /// The message.
        text: FuzzStr,
        /// Number of fragments (1 + this mod 8).
        pieces: u8,
        /// Interleave a ping.
        ping: bool,
    },
    /// A binary frame.
    Binary(FuzzBytes),
    /// A WebSocket ping (payload cut to 125 bytes).
    WsPing(FuzzBytes),
    /// A WebSocket pong (payload cut to 125 bytes).
    WsPong(FuzzBytes),
    /// A WebSocket close with this code (if any) and reason (cut to fit).
    Close {
        /// Close code.
        code: Option<u16>,
        /// Reason.
        reason: FuzzStr,
    },
    /// These bytes on the wire, as they are (anything at all).
    Raw(FuzzBytes),
    /// The application publishes on a channel (`Server::publish`).
    Publish(FuzzChannel, FuzzParams),
    /// Let the server (and its request tasks) run before the next step.
    Yield,
}

/// The message limit the `connection` target's server has (small, so the
/// fuzzer reaches it).
const FUZZ_MAX_FRAME: usize = 4096;

/// How many scheduler rounds a [`FuzzFrame::Yield`] gives the server (enough
/// for a request task to answer and the answer to be written).
const YIELD_ROUNDS: usize = 16;

/// How long a session may take after the client has sent everything.
const SESSION_BOUND: Duration = Duration::from_secs(10);

/// The server every `connection` run gets: the demo's methods, a small
/// frame limit, a small burst (so rate limits are reachable) and a short
/// handshake deadline.
fn fuzz_server() -> Server {
    let mut limits = Limits::default();
    limits
        .set_max_frame_len(FUZZ_MAX_FRAME)
        .set_burst(24)
        .set_messages_per_sec(50.0)
        .set_max_subscriptions(4)
        .set_outbound_queue(64)
        .set_handshake_timeout(Duration::from_secs(2));
    Server::builder()
        .config(ServerConfig::default().with_limits(limits))
        .methods(fuzz_methods())
        .build()
}

/// The methods a fuzzed session may call ([`FuzzMethod`]): `echo` answers
/// its params, `order.create` numbers each execution (so a replayed key
/// shows), `slow` answers after the given milliseconds (at most 30 s).
fn fuzz_methods() -> crate::rpc::Methods {
    use crate::rpc::RpcError;
    use std::sync::atomic::{AtomicU64, Ordering};
    let executions = Arc::new(AtomicU64::new(0));
    let mut methods = crate::rpc::Methods::new();
    methods.register("echo", |_ctx, value: serde_json::Value| async move {
        Ok::<_, RpcError>(value)
    });
    methods.register("order.create", move |ctx, item: serde_json::Value| {
        let n = executions.fetch_add(1, Ordering::Relaxed) + 1;
        async move { Ok::<_, RpcError>(json!({ "order": n, "item": item, "key": ctx.idempotency_key })) }
    });
    methods.register("slow", |_ctx, ms: u64| async move {
        tokio::time::sleep(Duration::from_millis(ms.min(30_000))).await;
        Ok::<_, RpcError>(ms)
    });
    methods
}

/// The one place that knows how the `/ws` upgrade hands a socket to the
/// connection driver (see `upgrade::handle`); adapt it when that changes.
async fn run_session<S>(server: &Server, ws: WebSocket<S>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let meta = ConnectionMeta {
        peer: SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 40_000)),
        header_token: None,
        admission: Admission::Admitted,
        _peer_slot: None,
    };
    connection::run(Arc::clone(&server.shared), ws, meta).await;
}

/// Fuzz target `connection`'s input decoding: the frames `data` stands for.
pub fn decode_frames(data: &[u8]) -> Vec<FuzzFrame> {
    Vec::<FuzzFrame>::arbitrary_take_rest(Unstructured::new(data)).unwrap_or_default()
}

/// What one [`connection()`] session produced (for tests that check the
/// harness reaches the server's logic, not just its first refusal).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionOutcome {
    /// The server sent `welcome`.
    pub welcomed: bool,
    /// The server's messages, by type name (`welcome`, `response`, ...).
    pub messages: Vec<String>,
    /// Results (not errors) among the responses.
    pub results: usize,
    /// Pongs the server sent.
    pub pongs: usize,
    /// The code of the server's close frame, if it sent one with a code.
    pub close_code: Option<u16>,
}

/// Fuzz target `connection`: run one session fed `frames` (then a close)
/// and check what the server wrote. Panics if an invariant breaks.
pub fn connection(frames: &[FuzzFrame]) -> SessionOutcome {
    // A runtime per session: tasks a session leaves behind (a `slow`
    // request) go with it, so runs do not influence each other.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    let server = fuzz_server();
    let (client, socket) = tokio::io::duplex(64 * 1024);
    let (mut from_server, mut to_server) = tokio::io::split(client);
    let written = rt.block_on(async {
        let session = run_session(&server, WebSocket::new(socket, &[], FUZZ_MAX_FRAME));
        let send = async {
            let mut epochs: HashMap<String, String> = HashMap::new();
            let mut mask_seed = 0x5eed_u64;
            for frame in frames {
                match frame {
                    FuzzFrame::Publish(channel, data) => {
                        // A refused publication (a bad channel name, a
                        // payload too deep or too large) changes nothing.
                        if let Ok(publication) = server.publish(channel.name(), data.value()) {
                            epochs.insert(channel.name().to_owned(), publication.epoch);
                        }
                    }
                    FuzzFrame::Yield => {
                        for _ in 0..YIELD_ROUNDS {
                            tokio::task::yield_now().await;
                        }
                    }
                    frame => {
                        let bytes = wire_bytes(frame, &epochs, &mut mask_seed);
                        if to_server.write_all(&bytes).await.is_err() {
                            // The server is gone: nothing more to say.
                            return;
                        }
                    }
                }
            }
            // Let the server answer what it read before the close (a peer
            // that closes first loses what is still queued for it).
            for _ in 0..4 * YIELD_ROUNDS {
                tokio::task::yield_now().await;
            }
            let close = client_frame(OP_CLOSE, true, &1000u16.to_be_bytes(), &mut mask_seed);
            let _ = to_server.write_all(&close).await;
            let _ = to_server.shutdown().await;
        };
        let receive = async {
            let mut written = Vec::new();
            let _ = from_server.read_to_end(&mut written).await;
            written
        };
        let all = async { tokio::join!(session, send, receive).2 };
        match tokio::time::timeout(SESSION_BOUND, all).await {
            Ok(written) => written,
            Err(_) => panic!("the session did not end within {SESSION_BOUND:?} of the close"),
        }
    });
    drop(rt);
    assert_eq!(
        server.metrics().open_connections(),
        0,
        "the connection is still counted after its task ended"
    );
    check_server_output(frames, &written)
}

/// Check everything the server wrote in one session.
fn check_server_output(frames: &[FuzzFrame], written: &[u8]) -> SessionOutcome {
    let mut outcome = SessionOutcome::default();
    let parsed = parse_server_frames(written).unwrap_or_else(|e| panic!("server output: {e}"));
    // Raw bytes may hold any frames, so counts are only checked without them.
    let exact = !frames.iter().any(|f| matches!(f, FuzzFrame::Raw(_)));
    let pings_sent = frames
        .iter()
        .map(|f| match f {
            FuzzFrame::WsPing(_) => 1,
            FuzzFrame::Fragmented { ping, .. } => usize::from(*ping),
            _ => 0,
        })
        .sum::<usize>();
    let texts_sent = frames
        .iter()
        .filter(|f| {
            !matches!(
                f,
                FuzzFrame::Binary(_)
                    | FuzzFrame::WsPing(_)
                    | FuzzFrame::WsPong(_)
                    | FuzzFrame::Close { .. }
                    | FuzzFrame::Publish(..)
                    | FuzzFrame::Yield
            )
        })
        .count();
    let mut pongs = 0;
    let mut texts = 0;
    let mut welcomes = 0;
    let mut responses: HashMap<u64, usize> = HashMap::new();
    for (i, (opcode, payload)) in parsed.iter().enumerate() {
        match *opcode {
            OP_TEXT => {
                let text = std::str::from_utf8(payload)
                    .unwrap_or_else(|_| panic!("server text frame {i} is not UTF-8"));
                let message = decode_server(text)
                    .unwrap_or_else(|e| panic!("server frame {text:?} does not decode: {e}"));
                outcome.messages.push(message.kind().name().to_owned());
                match message {
                    ServerMessage::Welcome(_) => {
                        welcomes += 1;
                        outcome.welcomed = true;
                        assert_eq!(texts, 0, "welcome is not the first message");
                    }
                    ServerMessage::Response(response) => {
                        *responses.entry(response.id).or_default() += 1;
                        if matches!(response.reply, Reply::Result(_)) {
                            outcome.results += 1;
                        }
                    }
                    _ => {}
                }
                texts += 1;
            }
            OP_PONG => {
                pongs += 1;
                assert!(payload.len() <= 125, "a pong of {} bytes", payload.len());
            }
            OP_CLOSE => {
                assert_eq!(i, parsed.len() - 1, "frames after the server's close");
                check_close_payload(payload);
                if let [hi, lo, ..] = payload[..] {
                    outcome.close_code = Some(u16::from_be_bytes([hi, lo]));
                }
            }
            other => panic!("the server sent a frame with opcode {other:#x}"),
        }
    }
    outcome.pongs = pongs;
    assert!(welcomes <= 1, "{welcomes} welcomes");
    if exact {
        assert!(pongs <= pings_sent, "{pongs} pongs for {pings_sent} pings");
        let total: usize = responses.values().sum();
        assert!(
            total <= texts_sent,
            "{total} responses for {texts_sent} text frames"
        );
        for (id, count) in &responses {
            let asked = frames
                .iter()
                .filter(|f| match f {
                    FuzzFrame::Request { id: sent, .. } => sent == id,
                    FuzzFrame::Text(_) | FuzzFrame::Fragmented { .. } => true,
                    _ => false,
                })
                .count();
            assert!(*count <= asked, "{count} responses to request {id}");
        }
    }
    outcome
}

/// A server's close: empty, or a code it may send and a UTF-8 reason.
fn check_close_payload(payload: &[u8]) {
    assert!(payload.len() <= 125, "a close of {} bytes", payload.len());
    if payload.is_empty() {
        return;
    }
    assert!(payload.len() >= 2, "a close payload of one byte");
    let code = u16::from_be_bytes([payload[0], payload[1]]);
    assert!(
        matches!(code, 1000..=1003 | 1007..=1014 | 3000..=4999),
        "the server closed with code {code}, which must not be sent"
    );
    assert!(
        std::str::from_utf8(&payload[2..]).is_ok(),
        "a close reason that is not UTF-8"
    );
}

/// The bytes a client puts on the wire for `frame`.
fn wire_bytes(frame: &FuzzFrame, epochs: &HashMap<String, String>, mask: &mut u64) -> Vec<u8> {
    let text = |message: Value, mask: &mut u64| {
        client_frame(OP_TEXT, true, message.to_string().as_bytes(), mask)
    };
    let cut = |bytes: &[u8]| bytes[..bytes.len().min(125)].to_vec();
    match frame {
        FuzzFrame::Text(s) => client_frame(OP_TEXT, true, s.0.as_bytes(), mask),
        FuzzFrame::Connect {
            protocol,
            token,
            session,
        } => {
            let mut m = json!({ "type": "connect", "protocol": protocol });
            if let Some(token) = token {
                m["token"] = json!(token.0);
            }
            if let Some(session) = session {
                m["session"] = json!(session.0);
            }
            text(m, mask)
        }
        FuzzFrame::Request {
            id,
            method,
            params,
            idem,
            timeout_ms,
        } => {
            let method = match method {
                FuzzMethod::Echo => "echo",
                FuzzMethod::OrderCreate => "order.create",
                FuzzMethod::Slow => "slow",
                FuzzMethod::Other(name) => &name.0,
            };
            let mut m = json!({
                "type": "request", "id": id, "method": method, "params": params.value(),
            });
            if let Some(idem) = idem {
                m["idem"] = json!(idem.key());
            }
            if let Some(ms) = timeout_ms {
                m["timeout_ms"] = json!(ms);
            }
            text(m, mask)
        }
        FuzzFrame::Subscribe { channel, since } => {
            let mut m = json!({ "type": "subscribe", "channel": channel.name() });
            if let Some((epoch, offset)) = since {
                let epoch = match epoch {
                    FuzzEpoch::Current => epochs.get(channel.name()).cloned().unwrap_or_default(),
                    FuzzEpoch::Other(epoch) => epoch.0.clone(),
                };
                m["since"] = json!({ "epoch": epoch, "offset": offset });
            }
            text(m, mask)
        }
        FuzzFrame::Unsubscribe(channel) => text(
            json!({ "type": "unsubscribe", "channel": channel.name() }),
            mask,
        ),
        FuzzFrame::Ping => text(json!({ "type": "ping" }), mask),
        FuzzFrame::Pong => text(json!({ "type": "pong" }), mask),
        FuzzFrame::Padded(len) => {
            let pad = "p".repeat(usize::from(*len));
            text(json!({ "type": "ping", "pad": pad }), mask)
        }
        FuzzFrame::Fragmented { text, pieces, ping } => {
            let bytes = text.0.as_bytes();
            let pieces = 1 + usize::from(*pieces % 8);
            let step = bytes.len().div_ceil(pieces).max(1);
            let parts: Vec<&[u8]> = if bytes.is_empty() {
                vec![&[]]
            } else {
                bytes.chunks(step).collect()
            };
            let mut out = Vec::new();
            for (i, part) in parts.iter().enumerate() {
                let opcode = if i == 0 { OP_TEXT } else { OP_CONTINUATION };
                out.extend(client_frame(opcode, i + 1 == parts.len(), part, mask));
                if i == 0 && *ping {
                    out.extend(client_frame(OP_PING, true, b"mid", mask));
                }
            }
            out
        }
        FuzzFrame::Binary(bytes) => client_frame(OP_BINARY, true, &bytes.0, mask),
        FuzzFrame::WsPing(bytes) => client_frame(OP_PING, true, &cut(&bytes.0), mask),
        FuzzFrame::WsPong(bytes) => client_frame(OP_PONG, true, &cut(&bytes.0), mask),
        FuzzFrame::Close { code, reason } => {
            let mut payload = Vec::new();
            if let Some(code) = code {
                payload.extend_from_slice(&code.to_be_bytes());
                payload.extend_from_slice(reason.0.as_bytes());
            }
            client_frame(OP_CLOSE, true, &cut(&payload), mask)
        }
        FuzzFrame::Raw(bytes) => bytes.0.clone(),
        FuzzFrame::Publish(..) | FuzzFrame::Yield => Vec::new(),
    }
}

/// One masked client frame (mask keys from a seeded generator).
fn client_frame(opcode: u8, fin: bool, payload: &[u8], seed: &mut u64) -> Vec<u8> {
    let key = (splitmix64(seed) as u32).to_be_bytes();
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(if fin { 0x80 } else { 0 } | opcode);
    let len = payload.len();
    if len < 126 {
        out.push(0x80 | len as u8);
    } else if let Ok(len) = u16::try_from(len) {
        out.push(0x80 | 126);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(0x80 | 127);
        out.extend_from_slice(&(len as u64).to_be_bytes());
    }
    out.extend_from_slice(&key);
    out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    out
}

// ---------------------------------------------------------------------------
// Writing `connection` inputs (seed corpora)
// ---------------------------------------------------------------------------

/// The input bytes that [`decode_frames`] turns into `frames`: the inverse
/// of the derived `Arbitrary` decoding, for writing seed inputs. Strings and
/// byte strings longer than 65,535 bytes are cut.
pub fn encode_frames(frames: &[FuzzFrame]) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames {
        out.push(1); // "another element follows"
        frame.unparse(&mut out);
    }
    out
}

impl Unparse for FuzzBytes {
    fn unparse(&self, out: &mut Vec<u8>) {
        let len = self.0.len().min(usize::from(u16::MAX));
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.extend_from_slice(&self.0[..len]);
    }
}

impl Unparse for FuzzStr {
    fn unparse(&self, out: &mut Vec<u8>) {
        let mut end = self.0.len().min(usize::from(u16::MAX));
        while !self.0.is_char_boundary(end) {
            end -= 1;
        }
        FuzzBytes(self.0.as_bytes()[..end].to_vec()).unparse(out);
    }
}

impl Unparse for FuzzMethod {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzMethod::Echo => variant(out, 0, 4),
            FuzzMethod::OrderCreate => variant(out, 1, 4),
            FuzzMethod::Slow => variant(out, 2, 4),
            FuzzMethod::Other(name) => {
                variant(out, 3, 4);
                name.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzParams {
    fn unparse(&self, out: &mut Vec<u8>) {
        const N: u64 = 7;
        match self {
            FuzzParams::Null => variant(out, 0, N),
            FuzzParams::Bool(b) => {
                variant(out, 1, N);
                b.unparse(out);
            }
            FuzzParams::Int(n) => {
                variant(out, 2, N);
                n.unparse(out);
            }
            FuzzParams::Millis(ms) => {
                variant(out, 3, N);
                ms.unparse(out);
            }
            FuzzParams::Str(s) => {
                variant(out, 4, N);
                s.unparse(out);
            }
            FuzzParams::Object(item, n) => {
                variant(out, 5, N);
                item.unparse(out);
                n.unparse(out);
            }
            FuzzParams::Json(text) => {
                variant(out, 6, N);
                text.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzChannel {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzChannel::News => variant(out, 0, 3),
            FuzzChannel::Feed => variant(out, 1, 3),
            FuzzChannel::Other(name) => {
                variant(out, 2, 3);
                name.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzEpoch {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzEpoch::Current => variant(out, 0, 2),
            FuzzEpoch::Other(epoch) => {
                variant(out, 1, 2);
                epoch.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzKey {
    fn unparse(&self, out: &mut Vec<u8>) {
        match self {
            FuzzKey::K1 => variant(out, 0, 3),
            FuzzKey::K2 => variant(out, 1, 3),
            FuzzKey::Other(key) => {
                variant(out, 2, 3);
                key.unparse(out);
            }
        }
    }
}

impl Unparse for FuzzFrame {
    fn unparse(&self, out: &mut Vec<u8>) {
        const N: u64 = 16;
        match self {
            FuzzFrame::Text(s) => {
                variant(out, 0, N);
                s.unparse(out);
            }
            FuzzFrame::Connect {
                protocol,
                token,
                session,
            } => {
                variant(out, 1, N);
                protocol.unparse(out);
                token.unparse(out);
                session.unparse(out);
            }
            FuzzFrame::Request {
                id,
                method,
                params,
                idem,
                timeout_ms,
            } => {
                variant(out, 2, N);
                id.unparse(out);
                method.unparse(out);
                params.unparse(out);
                idem.unparse(out);
                timeout_ms.unparse(out);
            }
            FuzzFrame::Subscribe { channel, since } => {
                variant(out, 3, N);
                channel.unparse(out);
                since.unparse(out);
            }
            FuzzFrame::Unsubscribe(channel) => {
                variant(out, 4, N);
                channel.unparse(out);
            }
            FuzzFrame::Ping => variant(out, 5, N),
            FuzzFrame::Pong => variant(out, 6, N),
            FuzzFrame::Padded(len) => {
                variant(out, 7, N);
                len.unparse(out);
            }
            FuzzFrame::Fragmented { text, pieces, ping } => {
                variant(out, 8, N);
                text.unparse(out);
                pieces.unparse(out);
                ping.unparse(out);
            }
            FuzzFrame::Binary(bytes) => {
                variant(out, 9, N);
                bytes.unparse(out);
            }
            FuzzFrame::WsPing(bytes) => {
                variant(out, 10, N);
                bytes.unparse(out);
            }
            FuzzFrame::WsPong(bytes) => {
                variant(out, 11, N);
                bytes.unparse(out);
            }
            FuzzFrame::Close { code, reason } => {
                variant(out, 12, N);
                code.unparse(out);
                reason.unparse(out);
            }
            FuzzFrame::Raw(bytes) => {
                variant(out, 13, N);
                bytes.unparse(out);
            }
            FuzzFrame::Publish(channel, data) => {
                variant(out, 14, N);
                channel.unparse(out);
                data.unparse(out);
            }
            FuzzFrame::Yield => variant(out, 15, N),
        }
    }
}
