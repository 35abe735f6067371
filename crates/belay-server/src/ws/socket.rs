//! The WebSocket over a socket: reading into the per-thread scratch buffer,
//! the frame parser and assembler on what arrived, answering a close,
//! queueing encoded frames and writing them out, the cooperative budget.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite};

use super::assemble::Assembler;
use super::encode::{close_payload, encode_frame, head_left_after};
use super::frame::{parse_frame, Frame, MAX_CONTROL, OP_BINARY, OP_CLOSE, OP_PONG, OP_TEXT};
use super::scratch::poll_read_scratch;
use super::{Event, Message, WsError, HIGH_WATER};

/// Bytes of a message that cost one more unit of the connection task's
/// cooperative budget ([`WebSocket::poll_event`]): the same unit as the
/// source's work share, so one poll handles at most ~32 KiB of a peer's
/// messages before other tasks get the thread.
const BUDGET_UNIT_BYTES: usize = belay_proto::server::WORK_UNIT_BYTES;

/// A server-side WebSocket over `S` (the HTTP upgrade already answered).
pub(crate) struct WebSocket<S> {
    pub(super) io: S,
    /// Received bytes not yet parsed (empty, unallocated, when idle).
    pub(super) read: BytesMut,
    /// Encoded frames not yet written (empty, unallocated, when idle).
    pub(super) write: BytesMut,
    pub(super) assembler: Assembler,
    /// Bytes of the frame at the front of `write` still to be written when
    /// its start is already out (0: `write` starts at a frame boundary).
    pub(super) head_left: usize,
    max_payload: usize,
    pub(super) eof: bool,
    close_sent: bool,
    pub(super) close_received: bool,
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
            assembler: Assembler::default(),
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
        self.encode(OP_CLOSE, &close_payload(code, reason));
        self.close_sent = true;
    }

    fn encode(&mut self, opcode: u8, payload: &[u8]) {
        if !self.close_sent {
            encode_frame(&mut self.write, opcode, payload);
        }
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
        let coop = ready!(tokio::task::coop::poll_proceed(cx));
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
    pub(super) fn poll_read_some(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let read = &mut self.read;
        poll_read_scratch(&mut self.io, cx, |bytes| read.extend_from_slice(bytes))
    }

    /// Take one complete frame off `self.read`, if there is one.
    pub(super) fn parse(&mut self) -> Result<Option<Frame>, WsError> {
        parse_frame(&mut self.read, self.assembler.assembled(), self.max_payload)
    }

    /// Hand a frame to the assembler; a close is answered with a close
    /// echoing its code (unless one was sent), after which nothing more is
    /// read.
    pub(super) fn on_frame(&mut self, frame: Frame) -> Result<Option<Message>, WsError> {
        let message = self.assembler.handle_frame(frame)?;
        if let Some(Message::Close(code)) = message {
            self.close_received = true;
            if !self.close_sent {
                let echo = code.map(u16::to_be_bytes);
                self.encode(OP_CLOSE, echo.as_ref().map_or(&[][..], |c| &c[..]));
                self.close_sent = true;
            }
        }
        Ok(message)
    }
}
