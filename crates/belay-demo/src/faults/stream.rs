//! Freeze, flapping and restart as a stream layer: each session's byte
//! stream passes through a [`FaultStream`] that consults the bench on every
//! read, write, flush and shutdown.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll};

use belay_server::stream::{BoxedStream, StreamLayer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use super::{lock, FaultBench, StreamCell};

/// The stream layer of a [`FaultBench`]
/// ([`ServerBuilder::stream_layer`](belay_server::ServerBuilder::stream_layer)).
#[derive(Debug, Clone)]
pub struct FaultStreams {
    bench: FaultBench,
}

impl FaultBench {
    /// The layer that applies freeze, flapping and restart to sessions.
    pub fn streams(&self) -> FaultStreams {
        FaultStreams {
            bench: self.clone(),
        }
    }
}

impl StreamLayer for FaultStreams {
    fn wrap(&self, stream: BoxedStream, _peer: SocketAddr) -> BoxedStream {
        let bench = &self.bench.bench;
        let cell = Arc::new(StreamCell::default());
        self.bench.track(&cell);
        let flapping = lock(&bench.faults).flapping;
        Box::new(FaultStream {
            inner: Some(stream),
            cell,
            bench: self.bench.clone(),
            generation: bench.generation.load(Ordering::Acquire),
            restarts: bench.restarts.load(Ordering::Acquire),
            flap: flapping.map(|after| Box::pin(tokio::time::sleep(after))),
        })
    }
}

/// One session's stream under the bench's faults.
struct FaultStream {
    /// `None` once cut.
    inner: Option<BoxedStream>,
    cell: Arc<StreamCell>,
    bench: FaultBench,
    /// The bench's generation last seen.
    generation: u64,
    /// Restarts counted when this stream opened.
    restarts: u64,
    /// When flapping cuts this stream.
    flap: Option<Pin<Box<Sleep>>>,
}

impl FaultStream {
    /// Whether the session may do I/O now: `Pending` while frozen (woken
    /// when a fault changes), an error once cut.
    fn gate(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let bench = &self.bench.bench;
        self.cell.register(cx.waker());
        if bench.restarts.load(Ordering::Acquire) != self.restarts {
            self.inner = None;
        }
        let generation = bench.generation.load(Ordering::Acquire);
        if generation != self.generation {
            self.generation = generation;
            // Switched on: this session too goes after the delay; switched
            // off: it is spared; still on: its deadline stands.
            match lock(&bench.faults).flapping {
                Some(after) if self.flap.is_none() => {
                    self.flap = Some(Box::pin(tokio::time::sleep(after)));
                }
                Some(_) => {}
                None => self.flap = None,
            }
        }
        if let Some(flap) = self.flap.as_mut() {
            if flap.as_mut().poll(cx).is_ready() {
                self.flap = None;
                self.inner = None;
            }
        }
        if self.inner.is_none() {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        if bench.frozen.load(Ordering::Acquire) {
            return Poll::Pending;
        }
        Poll::Ready(Ok(()))
    }

    fn inner(&mut self) -> Pin<&mut (dyn belay_server::stream::ByteStream + 'static)> {
        match self.inner.as_mut() {
            Some(inner) => Pin::new(inner.as_mut()),
            None => unreachable!("gate() lets no cut stream through"),
        }
    }
}

/// Through the gate, then the inner stream's `$method`.
macro_rules! gated {
    ($self:ident, $cx:ident, $method:ident($($arg:expr),*)) => {{
        let this = $self.get_mut();
        match this.gate($cx) {
            Poll::Ready(Ok(())) => this.inner().$method($cx $(, $arg)*),
            Poll::Ready(Err(error)) => Poll::Ready(Err(error)),
            Poll::Pending => Poll::Pending,
        }
    }};
}

impl AsyncRead for FaultStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        gated!(self, cx, poll_read(buf))
    }
}

impl AsyncWrite for FaultStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        gated!(self, cx, poll_write(buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        gated!(self, cx, poll_flush())
    }

    /// A frozen stream holds its FIN back too.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        gated!(self, cx, poll_shutdown())
    }
}

impl Drop for FaultStream {
    /// Let go of while frozen: the socket stays open until the freeze ends.
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let bench = &self.bench.bench;
        let mut held = lock(&bench.held);
        if bench.frozen.load(Ordering::Acquire) {
            held.push(inner);
        } else {
            drop(held);
            drop(inner);
        }
    }
}
