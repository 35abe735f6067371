//! What a connection's driver needs of its transport. Two transports carry
//! a session: a WebSocket ([`crate::ws`]) and an SSE stream with the POSTs
//! tied to it ([`crate::sse`]). Both deliver the peer's messages whole and
//! in order, take the server's frames into a buffer the driver bounds, and
//! report how the peer went away, so one driver (and one core machine)
//! serves both.

use std::future::Future;
use std::io;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::ws::{Event, WebSocket};

pub(crate) trait Transport: Unpin + Send {
    /// The transport's name in the logs (`websocket`, `sse`).
    const KIND: &'static str;

    /// Bytes queued for the peer and not yet taken by the socket.
    fn buffered(&self) -> usize;

    /// Queue one message for the peer, as a frame of the connection's
    /// codec (text for JSON, binary for the binary codec).
    fn queue_message(&mut self, payload: &[u8]);

    /// Answer a transport-level ping (a WebSocket control frame; an SSE
    /// stream has none).
    fn queue_pong(&mut self, payload: &[u8]);

    /// Drop what is queued and not yet taken (the peer is not reading).
    fn discard_unsent(&mut self);

    /// The peer's next message, its end, an error, or room again in the
    /// buffer ([`Event::Room`]). Also moves what is queued to the socket.
    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Event>;

    /// Move everything queued to the socket.
    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>>;

    /// Close with `code` and `reason` (none: answer the peer's close),
    /// after what is queued, within `linger`.
    fn close(
        &mut self,
        code: Option<u16>,
        reason: &str,
        linger: Duration,
    ) -> impl Future<Output = ()> + Send;
}

impl<S> Transport for WebSocket<S>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    const KIND: &'static str = "websocket";

    fn buffered(&self) -> usize {
        WebSocket::buffered(self)
    }

    fn queue_message(&mut self, payload: &[u8]) {
        WebSocket::queue_message(self, payload);
    }

    fn queue_pong(&mut self, payload: &[u8]) {
        WebSocket::queue_pong(self, payload);
    }

    fn discard_unsent(&mut self) {
        WebSocket::discard_unsent(self);
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Event> {
        WebSocket::poll_event(self, cx)
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        WebSocket::poll_flush(self, cx)
    }

    fn close(
        &mut self,
        code: Option<u16>,
        reason: &str,
        linger: Duration,
    ) -> impl Future<Output = ()> + Send {
        WebSocket::close(self, code, reason, linger)
    }
}
