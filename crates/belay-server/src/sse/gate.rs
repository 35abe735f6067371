//! The stream layer's hold on a session over the fallback. A
//! [`StreamLayer`] wraps a WebSocket session's byte stream; an SSE session
//! has none (its bytes are HTTP bodies), so the layer is handed a stream
//! that carries nothing, and the session polls it (a flush) before it reads
//! a send or writes an event. A layer that holds that I/O pending (a
//! freeze) holds the session's I/O; one that fails it (a cut) ends the
//! session. The layer cannot see or shape an SSE session's bytes.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::stream::{BoxedStream, StreamLayer};

pub(crate) struct Gate {
    stream: BoxedStream,
}

impl Gate {
    pub(crate) fn new(layer: &dyn StreamLayer, peer: SocketAddr) -> Gate {
        Gate {
            stream: layer.wrap(Box::new(Inert), peer),
        }
    }

    /// `Ready(true)`: the session may do I/O now; `Ready(false)`: the
    /// layer cut it; `Pending`: held (woken by the layer).
    pub(crate) fn poll_open(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        Pin::new(&mut self.stream).poll_flush(cx).map(|r| r.is_ok())
    }
}

/// A stream that carries nothing: writes are taken and dropped, a read
/// never completes (nothing reads it).
struct Inert;

impl AsyncRead for Inert {
    fn poll_read(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        _: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Poll::Pending
    }
}

impl AsyncWrite for Inert {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
