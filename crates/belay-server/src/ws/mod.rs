//! A minimal RFC 6455 server-side WebSocket codec whose buffers are released
//! whenever the connection is idle.
//!
//! Why not a general codec: an idle session must cost a few kilobytes, and a
//! `FramedRead`-style codec keeps an 8 KiB read buffer per connection for its
//! whole life. Here:
//!
//! * reads go through one 16 KiB scratch buffer per worker thread; only the
//!   bytes of a frame that has not fully arrived are kept per connection, and
//!   that buffer is dropped as soon as it is empty;
//! * encoded frames wait in a write buffer that is dropped as soon as it is
//!   flushed;
//! * a fragmented message being reassembled lives in a box that exists only
//!   while the message does.
//!
//! What it checks (a peer that breaks a rule gets the close code in
//! brackets, through [`WsError::close_code`]): client frames are masked, RSV
//! bits are zero (no extension is negotiated), opcodes are known, control
//! frames are final and at most 125 bytes, continuations continue something
//! and data frames do not interrupt a fragmented message [1002]; a message is
//! at most `max_payload` bytes in all its fragments [1009]; text messages and
//! close reasons are UTF-8, checked fragment by fragment so an invalid
//! message fails as soon as a fragment shows it [1007]; close codes are
//! valid to receive [1002]. Pings are answered with a pong carrying the same
//! payload; a close is answered with a close echoing its code, after which
//! nothing more is read or sent. Nothing a peer sends can make it panic.
//!
//! Reading stops while more than [`HIGH_WATER`] bytes wait to be written, so
//! a peer that sends but does not read cannot grow the write buffer without
//! bound (the server's outbound queue bound takes over from there).

mod closing;

pub(crate) use closing::LINGER_BYTES;

use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Size of the per-thread read scratch buffer.
const SCRATCH: usize = 16 * 1024;

/// Reading pauses while this many bytes wait to be written.
pub(crate) const HIGH_WATER: usize = 64 * 1024;

/// Longest control frame payload (RFC 6455 §5.5).
const MAX_CONTROL: usize = 125;

const OP_CONTINUATION: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

thread_local! {
    static SCRATCH_BUF: RefCell<Box<[u8]>> = RefCell::new(vec![0; SCRATCH].into_boxed_slice());
}

/// A message from the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// A complete text message (valid UTF-8).
    Text(Bytes),
    /// A complete binary message.
    Binary(Bytes),
    /// A ping, with its payload (not answered yet: see
    /// [`WebSocket::queue_pong`]).
    Ping(Bytes),
    /// A pong.
    Pong,
    /// The peer closed, with this code if it sent one (the close is already
    /// answered; nothing more will be read).
    Close(Option<u16>),
}

/// Bytes of a message that cost one more unit of the connection task's
/// cooperative budget ([`WebSocket::poll_event`]): the same unit as the
/// source's work share, so one poll handles at most ~32 KiB of a peer's
/// messages before other tasks get the thread.
const BUDGET_UNIT_BYTES: usize = belay_proto::server::WORK_UNIT_BYTES;

/// What [`WebSocket::poll_event`] saw.
#[derive(Debug)]
pub(crate) enum Event {
    /// A message from the peer.
    Message(Message),
    /// The codec gave up on the peer.
    Error(WsError),
    /// The peer is gone (end of stream, or after its close).
    End,
    /// The write buffer, full (at least [`HIGH_WATER`]) when this call
    /// began, has drained below it: more may be queued.
    Room,
}

/// Why the codec gave up on the peer.
#[derive(Debug)]
pub(crate) enum WsError {
    /// The socket failed.
    Io(io::Error),
    /// The peer broke the framing rules (close 1002).
    Protocol(&'static str),
    /// A message longer than the limit (close 1009).
    TooBig,
    /// A text message or close reason that is not UTF-8 (close 1007).
    InvalidUtf8,
}

impl WsError {
    /// The close code the protocol asks for, if a close can still be sent.
    pub(crate) fn close_code(&self) -> Option<u16> {
        match self {
            WsError::Io(_) => None,
            WsError::Protocol(_) => Some(1002),
            WsError::TooBig => Some(1009),
            WsError::InvalidUtf8 => Some(1007),
        }
    }

    /// A short reason for the close frame.
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            WsError::Io(_) => "",
            WsError::Protocol(why) => why,
            WsError::TooBig => "message too big",
            WsError::InvalidUtf8 => "invalid utf-8",
        }
    }
}

impl std::fmt::Display for WsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WsError::Io(e) => write!(f, "i/o error: {e}"),
            other => f.write_str(other.reason()),
        }
    }
}

/// A message arriving in fragments.
struct Partial {
    binary: bool,
    payload: BytesMut,
    /// Bytes of `payload` known to be valid UTF-8 (text only).
    valid_up_to: usize,
}

impl Partial {
    /// Check the UTF-8 of what arrived since the last check: an invalid
    /// sequence fails now; an incomplete one at the end may still complete.
    fn check_utf8(&mut self) -> Result<(), WsError> {
        if self.binary {
            return Ok(());
        }
        match std::str::from_utf8(&self.payload[self.valid_up_to..]) {
            Ok(_) => self.valid_up_to = self.payload.len(),
            Err(e) if e.error_len().is_some() => return Err(WsError::InvalidUtf8),
            Err(e) => self.valid_up_to += e.valid_up_to(),
        }
        Ok(())
    }
}

/// One parsed frame.
struct Frame {
    fin: bool,
    opcode: u8,
    payload: BytesMut,
}

/// A server-side WebSocket over `S` (the HTTP upgrade already answered).
pub(crate) struct WebSocket<S> {
    io: S,
    /// Received bytes not yet parsed (empty, unallocated, when idle).
    read: BytesMut,
    /// Encoded frames not yet written (empty, unallocated, when idle).
    write: BytesMut,
    partial: Option<Box<Partial>>,
    /// Bytes of the frame at the front of `write` still to be written when
    /// its start is already out (0: `write` starts at a frame boundary).
    head_left: usize,
    max_payload: usize,
    eof: bool,
    close_sent: bool,
    close_received: bool,
    /// Messages go out as binary frames (a connection that negotiated the
    /// binary codec), else as text.
    binary_messages: bool,
}

impl<S> std::fmt::Debug for WebSocket<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocket")
            .field("buffered_read", &self.read.len())
            .field("buffered_write", &self.write.len())
            .field("close_sent", &self.close_sent)
            .field("close_received", &self.close_received)
            .finish_non_exhaustive()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> WebSocket<S> {
    /// A WebSocket over `io`; `leftover` are bytes that arrived after the
    /// upgrade request (normally none); messages are limited to
    /// `max_payload` bytes.
    pub(crate) fn new(io: S, leftover: &[u8], max_payload: usize) -> Self {
        WebSocket {
            io,
            read: BytesMut::from(leftover),
            write: BytesMut::new(),
            partial: None,
            head_left: 0,
            max_payload,
            eof: false,
            close_sent: false,
            close_received: false,
            binary_messages: false,
        }
    }

    /// Bytes waiting to be written.
    pub(crate) fn buffered(&self) -> usize {
        self.write.len()
    }

    /// Send [`queue_message`](Self::queue_message)'s messages as binary
    /// frames (`true`) or text frames (the default).
    pub(crate) fn set_binary_messages(&mut self, binary: bool) {
        self.binary_messages = binary;
    }

    /// Queue one message as a frame of the connection's kind.
    pub(crate) fn queue_message(&mut self, payload: &[u8]) {
        let opcode = if self.binary_messages {
            OP_BINARY
        } else {
            OP_TEXT
        };
        self.encode(opcode, payload);
    }

    /// Queue a text frame (written by the next `next`/`flush`).
    pub(crate) fn queue_text(&mut self, payload: &[u8]) {
        self.encode(OP_TEXT, payload);
    }

    /// Queue a binary frame.
    pub(crate) fn queue_binary(&mut self, payload: &[u8]) {
        self.encode(OP_BINARY, payload);
    }

    /// Queue a pong answering a ping with `payload`.
    pub(crate) fn queue_pong(&mut self, payload: &[u8]) {
        self.encode(OP_PONG, &payload[..payload.len().min(MAX_CONTROL)]);
    }

    /// Drop every queued frame that has not started to go out (a frame
    /// partly written is finished, so the stream stays well framed). Used
    /// before an urgent close, so the close frame is next on the wire
    /// instead of behind a backlog the peer is not reading.
    pub(crate) fn discard_unsent(&mut self) {
        self.write.truncate(self.head_left);
        if self.write.is_empty() {
            self.write = BytesMut::new();
        }
    }

    /// Queue a close frame (once; later frames are not sent).
    pub(crate) fn queue_close(&mut self, code: Option<u16>, reason: &str) {
        if self.close_sent {
            return;
        }
        let mut payload = Vec::with_capacity(2 + reason.len().min(MAX_CONTROL - 2));
        if let Some(code) = code {
            payload.extend_from_slice(&code.to_be_bytes());
            payload.extend_from_slice(truncate(reason, MAX_CONTROL - 2).as_bytes());
        }
        self.encode(OP_CLOSE, &payload);
        self.close_sent = true;
    }

    fn encode(&mut self, opcode: u8, payload: &[u8]) {
        if self.close_sent {
            return;
        }
        let len = payload.len();
        let w = &mut self.write;
        w.reserve(10 + len);
        w.put_u8(0x80 | opcode);
        if len < 126 {
            w.put_u8(len as u8);
        } else if let Ok(len) = u16::try_from(len) {
            w.put_u8(126);
            w.put_u16(len);
        } else {
            w.put_u8(127);
            w.put_u64(len as u64);
        }
        w.extend_from_slice(payload);
    }

    /// The next message; `None` when the peer is gone (end of stream).
    /// Also writes what is queued. Cancel-safe.
    pub(crate) async fn next(&mut self) -> Option<Result<Message, WsError>> {
        poll_fn(|cx| self.poll_next(cx)).await
    }

    /// Like [`next`](Self::next), but also returns [`Event::Room`] when the
    /// write buffer drains below [`HIGH_WATER`] after being above it, so a
    /// caller that stopped queueing because it was full learns when to go
    /// on. Cancel-safe.
    ///
    /// Each event takes a unit of the task's cooperative budget (tokio's,
    /// 128 a poll), and a message one more per [`BUDGET_UNIT_BYTES`] of it:
    /// frames already in the read buffer need no socket read, which is
    /// where tokio would otherwise count, so a peer that packs many frames
    /// (or a few large ones) into its segments would keep its worker thread
    /// for all of them while other connections wait. Spent, the task
    /// yields before its next event.
    pub(crate) fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Event> {
        {
            let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
            let was_full = self.write.len() >= HIGH_WATER;
            let event = match self.poll_next(cx) {
                Poll::Ready(Some(Ok(message))) => Event::Message(message),
                Poll::Ready(Some(Err(error))) => Event::Error(error),
                Poll::Ready(None) => Event::End,
                Poll::Pending if was_full && self.write.len() < HIGH_WATER => Event::Room,
                Poll::Pending => return Poll::Pending,
            };
            coop.made_progress();
            if let Event::Message(Message::Text(bytes) | Message::Binary(bytes)) = &event {
                for _ in 0..bytes.len() / BUDGET_UNIT_BYTES {
                    // Pending: the budget is spent; this event still goes
                    // out, the next poll yields.
                    match tokio::task::coop::poll_proceed(cx) {
                        Poll::Ready(unit) => unit.made_progress(),
                        Poll::Pending => break,
                    }
                }
            }
            Poll::Ready(event)
        }
    }

    /// Write everything queued.
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        poll_fn(|cx| self.poll_flush(cx)).await
    }

    pub(crate) fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.write.is_empty() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.write))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.head_left = head_left_after(&self.write, self.head_left, n);
            self.write.advance(n);
        }
        // Idle: give the allocation back.
        self.write = BytesMut::new();
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Message, WsError>>> {
        if !self.write.is_empty() {
            if let Poll::Ready(Err(e)) = self.poll_flush(cx) {
                return Poll::Ready(Some(Err(WsError::Io(e))));
            }
        }
        loop {
            if self.close_received {
                return Poll::Ready(None);
            }
            match self.parse() {
                Err(e) => return Poll::Ready(Some(Err(e))),
                Ok(Some(frame)) => match self.on_frame(frame) {
                    Ok(Some(message)) => return Poll::Ready(Some(Ok(message))),
                    Ok(None) => continue,
                    Err(e) => return Poll::Ready(Some(Err(e))),
                },
                Ok(None) => {}
            }
            if self.eof {
                return Poll::Ready(None);
            }
            if self.write.len() >= HIGH_WATER {
                // The write above is pending and will wake us.
                return Poll::Pending;
            }
            match ready!(self.poll_read_some(cx)) {
                Ok(0) => self.eof = true,
                Ok(_) => {}
                Err(e) => return Poll::Ready(Some(Err(WsError::Io(e)))),
            }
        }
    }

    /// Read what the socket has into `self.read`, through the scratch buffer.
    fn poll_read_some(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let read = &mut self.read;
        poll_read_scratch(&mut self.io, cx, |bytes| read.extend_from_slice(bytes))
    }

    /// Take one complete frame off `self.read`, if there is one.
    fn parse(&mut self) -> Result<Option<Frame>, WsError> {
        let buf = &self.read[..];
        if buf.len() < 2 {
            return Ok(None);
        }
        let (b0, b1) = (buf[0], buf[1]);
        let fin = b0 & 0x80 != 0;
        if b0 & 0x70 != 0 {
            return Err(WsError::Protocol("reserved bits set"));
        }
        let opcode = b0 & 0x0f;
        let control = match opcode {
            OP_CONTINUATION | OP_TEXT | OP_BINARY => false,
            OP_CLOSE | OP_PING | OP_PONG => true,
            _ => return Err(WsError::Protocol("unknown opcode")),
        };
        if b1 & 0x80 == 0 {
            return Err(WsError::Protocol("unmasked client frame"));
        }
        let (len, at) = match b1 & 0x7f {
            126 => {
                let Some(b) = buf.get(2..4) else {
                    return Ok(None);
                };
                (u64::from(u16::from_be_bytes([b[0], b[1]])), 4)
            }
            127 => {
                let Some(b) = buf.get(2..10) else {
                    return Ok(None);
                };
                let mut be = [0; 8];
                be.copy_from_slice(b);
                let len = u64::from_be_bytes(be);
                if len >> 63 != 0 {
                    return Err(WsError::Protocol("frame length out of range"));
                }
                (len, 10)
            }
            n => (u64::from(n), 2),
        };
        if control {
            if !fin {
                return Err(WsError::Protocol("fragmented control frame"));
            }
            if len > MAX_CONTROL as u64 {
                return Err(WsError::Protocol("control frame too long"));
            }
        } else {
            let before = self.partial.as_ref().map_or(0, |p| p.payload.len()) as u64;
            if before.saturating_add(len) > self.max_payload as u64 {
                return Err(WsError::TooBig);
            }
        }
        // Bounded by `max_payload` (or 125) above.
        let len = len as usize;
        let total = at + 4 + len;
        if buf.len() < total {
            self.read.reserve(total - self.read.len());
            return Ok(None);
        }
        let mask = [buf[at], buf[at + 1], buf[at + 2], buf[at + 3]];
        self.read.advance(at + 4);
        let mut payload = self.read.split_to(len);
        if self.read.is_empty() {
            // Idle again: drop our share of the allocation.
            self.read = BytesMut::new();
        }
        unmask(&mut payload, mask);
        Ok(Some(Frame {
            fin,
            opcode,
            payload,
        }))
    }

    fn on_frame(&mut self, frame: Frame) -> Result<Option<Message>, WsError> {
        match frame.opcode {
            OP_TEXT | OP_BINARY => {
                if self.partial.is_some() {
                    return Err(WsError::Protocol("message inside a fragmented message"));
                }
                let binary = frame.opcode == OP_BINARY;
                let mut partial = Partial {
                    binary,
                    payload: frame.payload,
                    valid_up_to: 0,
                };
                partial.check_utf8()?;
                if frame.fin {
                    return finish(partial).map(Some);
                }
                self.partial = Some(Box::new(partial));
                Ok(None)
            }
            OP_CONTINUATION => {
                let Some(partial) = self.partial.as_mut() else {
                    return Err(WsError::Protocol("continuation of nothing"));
                };
                partial.payload.extend_from_slice(&frame.payload);
                partial.check_utf8()?;
                if frame.fin {
                    let partial = self.partial.take().map(|b| *b);
                    return partial.map(finish).transpose();
                }
                Ok(None)
            }
            OP_PING => Ok(Some(Message::Ping(frame.payload.freeze()))),
            OP_PONG => Ok(Some(Message::Pong)),
            _ => {
                let code = match frame.payload.len() {
                    0 => None,
                    1 => return Err(WsError::Protocol("close payload of one byte")),
                    _ => {
                        let code = u16::from_be_bytes([frame.payload[0], frame.payload[1]]);
                        if !receivable_close_code(code) {
                            return Err(WsError::Protocol("invalid close code"));
                        }
                        if std::str::from_utf8(&frame.payload[2..]).is_err() {
                            return Err(WsError::InvalidUtf8);
                        }
                        Some(code)
                    }
                };
                self.close_received = true;
                if !self.close_sent {
                    let echo = code.map(u16::to_be_bytes);
                    self.encode(OP_CLOSE, echo.as_ref().map_or(&[][..], |c| &c[..]));
                    self.close_sent = true;
                }
                Ok(Some(Message::Close(code)))
            }
        }
    }
}

/// Length of the server frame (header and payload) at the start of `buf`,
/// which holds frames this codec encoded (unmasked, well formed).
fn frame_len_at(buf: &[u8]) -> usize {
    match buf.get(1).map(|b| b & 0x7f) {
        Some(126) => {
            4 + buf
                .get(2..4)
                .map_or(0, |b| usize::from(u16::from_be_bytes([b[0], b[1]])))
        }
        Some(127) => {
            let len = buf.get(2..10).map_or(0, |b| {
                let mut be = [0; 8];
                be.copy_from_slice(b);
                u64::from_be_bytes(be)
            });
            10usize.saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
        }
        Some(n) => 2 + usize::from(n),
        None => buf.len(),
    }
}

/// The new [`WebSocket::head_left`] once `written` bytes of `buf` (whose
/// head frame had `head_left` bytes left) have gone out.
fn head_left_after(buf: &[u8], head_left: usize, written: usize) -> usize {
    if written < head_left {
        return head_left - written;
    }
    let mut at = head_left;
    while at < written {
        let end = at.saturating_add(frame_len_at(&buf[at..]));
        if end > written {
            return end - written;
        }
        at = end;
    }
    0
}

/// A complete message from its (last) fragment.
fn finish(partial: Partial) -> Result<Message, WsError> {
    if partial.binary {
        return Ok(Message::Binary(partial.payload.freeze()));
    }
    if partial.valid_up_to != partial.payload.len() {
        // Ends inside a UTF-8 sequence.
        return Err(WsError::InvalidUtf8);
    }
    Ok(Message::Text(partial.payload.freeze()))
}

/// Codes a peer may send (RFC 6455 §7.4): 1000–1015 except the ones that
/// must never be on the wire, and the registered/private range 3000–4999.
fn receivable_close_code(code: u16) -> bool {
    matches!(code, 1000..=1015 | 3000..=4999) && !matches!(code, 1004 | 1005 | 1006 | 1015)
}

fn unmask(payload: &mut [u8], mask: [u8; 4]) {
    let wide = u64::from_ne_bytes([
        mask[0], mask[1], mask[2], mask[3], mask[0], mask[1], mask[2], mask[3],
    ]);
    let mut chunks = payload.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(word) ^ wide).to_ne_bytes());
    }
    // The remainder starts at a multiple of 8, so the mask phase is 0.
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= mask[i & 3];
    }
}

/// Read what the socket has into the per-thread scratch buffer (a buffer
/// of its own if that one is in use) and hand the bytes to `take`; how
/// many there were (0: end of stream).
fn poll_read_scratch<S>(
    io: &mut S,
    cx: &mut Context<'_>,
    take: impl FnOnce(&[u8]),
) -> Poll<io::Result<usize>>
where
    S: AsyncRead + Unpin,
{
    SCRATCH_BUF.with(|scratch| {
        let mut fallback;
        let mut borrowed = scratch.try_borrow_mut();
        let buf: &mut [u8] = match borrowed.as_mut() {
            Ok(scratch) => &mut scratch[..],
            Err(_) => {
                fallback = vec![0; SCRATCH];
                &mut fallback[..]
            }
        };
        let mut buf = ReadBuf::new(buf);
        ready!(Pin::new(io).poll_read(cx, &mut buf))?;
        take(buf.filled());
        Poll::Ready(Ok(buf.filled().len()))
    })
}

/// The longest prefix of `text` of at most `max` bytes that ends on a char
/// boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests;
