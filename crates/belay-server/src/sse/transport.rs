//! A session's transport over the fallback: the stream's body (a
//! [`PipeWriter`]) carries the server's messages as events, and the
//! bodies of the client's sends arrive through the stream's channel
//! ([`Inbound`]), read one message (line) at a time as the connection asks
//! for them. A send is answered once its last line was read, so the
//! client's sends move at the pace of the connection, as TCP would make a
//! WebSocket's frames do. Under a stream layer, every read and write first
//! passes its [`Gate`]; events written meanwhile wait in `held`.

use std::future::{poll_fn, Future};
use std::io;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::events;
use super::gate::Gate;
use super::pipe::PipeWriter;
use crate::connection::Transport;
use crate::peer_limits::SlotCell;
use crate::sse_streams::{Inbound, StreamGuard};
use crate::ws::{Event, Message, HIGH_WATER};

/// The body of a send being read.
struct Reading {
    body: Bytes,
    at: usize,
    taken: Option<oneshot::Sender<()>>,
}

pub(crate) struct SseTransport {
    out: PipeWriter,
    inbound: mpsc::Receiver<Inbound>,
    reading: Option<Reading>,
    /// The stream's TCP connection, to drop if the close cannot be written.
    connection: Option<SlotCell>,
    /// The stream layer's hold, if the server has a layer.
    gate: Option<Gate>,
    /// Events written while the gate was not polled open.
    held: Vec<u8>,
    /// Forgets the stream (its sends find nothing) when the session ends.
    _guard: StreamGuard,
}

impl SseTransport {
    pub(crate) fn new(
        out: PipeWriter,
        inbound: mpsc::Receiver<Inbound>,
        guard: StreamGuard,
        connection: Option<SlotCell>,
        gate: Option<Gate>,
    ) -> Self {
        SseTransport {
            out,
            inbound,
            reading: None,
            connection,
            gate,
            held: Vec::new(),
            _guard: guard,
        }
    }

    /// Through the gate (if any): `Ready(true)` once the session may do
    /// I/O, with what was held written out; `Ready(false)`: cut.
    fn poll_gate(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let Some(gate) = self.gate.as_mut() else {
            return Poll::Ready(true);
        };
        let open = std::task::ready!(gate.poll_open(cx));
        if open && !self.held.is_empty() {
            self.out.write(&self.held);
            self.held = Vec::new();
        }
        Poll::Ready(open)
    }

    /// The next message of the body being read, if any is left; the send
    /// is answered when none is.
    fn next_line(&mut self) -> Option<Bytes> {
        let reading = self.reading.as_mut()?;
        while reading.at < reading.body.len() {
            let rest = &reading.body[reading.at..];
            let len = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let line = reading.body.slice(reading.at..reading.at + len);
            reading.at += len + 1;
            let line = trim_cr(line);
            if !line.is_empty() {
                return Some(line);
            }
        }
        if let Some(taken) = self.reading.take().and_then(|r| r.taken) {
            let _ = taken.send(());
        }
        None
    }
}

/// A line without its `\r` (a client that ends lines with CRLF).
fn trim_cr(line: Bytes) -> Bytes {
    match line.last() {
        Some(b'\r') => line.slice(..line.len() - 1),
        _ => line,
    }
}

impl Transport for SseTransport {
    const KIND: &'static str = "sse";

    fn buffered(&self) -> usize {
        self.out.buffered() + self.held.len()
    }

    fn queue_message(&mut self, payload: &[u8]) {
        if self.gate.is_some() {
            self.held.extend_from_slice(&events::message(payload));
        } else {
            self.out.write(&events::message(payload));
        }
    }

    fn queue_pong(&mut self, _payload: &[u8]) {}

    fn discard_unsent(&mut self) {
        self.out.discard();
        self.held = Vec::new();
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Event> {
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        if !std::task::ready!(self.poll_gate(cx)) {
            coop.made_progress();
            return Poll::Ready(Event::End);
        }
        let was_full = self.out.buffered() >= HIGH_WATER;
        if self.out.watch_drop(cx) {
            coop.made_progress();
            return Poll::Ready(Event::End);
        }
        let event = loop {
            if let Some(line) = self.next_line() {
                break Event::Message(Message::Text(line));
            }
            match self.inbound.poll_recv(cx) {
                Poll::Ready(Some(Inbound::Body { body, taken })) => {
                    self.reading = Some(Reading {
                        body,
                        at: 0,
                        taken: Some(taken),
                    });
                }
                Poll::Ready(Some(Inbound::Fail(error))) => break Event::Error(error),
                Poll::Ready(Some(Inbound::Close(code))) => {
                    break Event::Message(Message::Close(code))
                }
                Poll::Ready(None) => break Event::End,
                Poll::Pending if was_full && self.out.buffered() < HIGH_WATER => break Event::Room,
                Poll::Pending => {
                    if was_full {
                        // Woken when hyper takes from the body.
                        let _ = self.out.poll_drained(cx, HIGH_WATER);
                    }
                    return Poll::Pending;
                }
            }
        };
        coop.made_progress();
        Poll::Ready(event)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if !std::task::ready!(self.poll_gate(cx)) {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        self.out
            .poll_drained(cx, 0)
            .map_err(|()| io::ErrorKind::BrokenPipe.into())
    }

    fn close(
        &mut self,
        code: Option<u16>,
        reason: &str,
        linger: Duration,
    ) -> impl Future<Output = ()> + Send {
        if let Some(code) = code {
            let event = events::close(code, reason);
            if self.gate.is_some() {
                self.held.extend_from_slice(&event);
            } else {
                self.out.write(&event);
            }
        }
        if self.gate.is_none() {
            self.out.finish();
        }
        // A send still waiting is answered: the stream is over.
        self.reading = None;
        self.inbound.close();
        let (out, connection) = (&self.out, self.connection.as_ref());
        let (gate, held) = (self.gate.as_mut(), std::mem::take(&mut self.held));
        async move {
            // A held session's end waits for the layer too (a frozen
            // stream keeps its close and its end back); a cut one just ends.
            if let Some(gate) = gate {
                if poll_fn(|cx| gate.poll_open(cx)).await {
                    out.write(&held);
                }
                out.finish();
            }
            let drained = tokio::time::timeout(linger, poll_fn(|cx| out.poll_drained(cx, 0))).await;
            if !matches!(drained, Ok(Ok(()))) {
                // The peer does not read: hyper would wait on its write for
                // ever, holding the connection after the session is gone.
                out.discard();
                if let Some(connection) = connection {
                    connection.abort();
                }
            }
        }
    }
}
