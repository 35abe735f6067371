//! The closing handshake as nginx's lingering close does it: the close
//! frame written, the write side shut, what the peer still sends read and
//! dropped within bounds, so a peer that broke a limit reads why instead of
//! a reset.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};

use super::scratch::poll_read_scratch;
use super::WebSocket;

/// Most bytes a closing connection reads (and drops) from its peer while it
/// waits for the peer's close: enough for what a client that broke the
/// frame limit has already sent (a few MiB, which it must get off its
/// hands before it reads the close frame), without letting a peer that
/// never stops keep a worker reading for the whole linger.
pub(crate) const LINGER_BYTES: usize = 8 << 20;

impl<S: AsyncRead + AsyncWrite + Unpin> WebSocket<S> {
    /// Close the way nginx's lingering close does: queue a close frame
    /// (unless one was sent); write what is queued while reading what the
    /// peer still sends ([`poll_closing`](Self::poll_closing)); shut the
    /// socket down for writing; then read and discard until the peer's
    /// close or end of stream; at most [`LINGER_BYTES`] bytes read in all,
    /// all within `linger`. Unread input at the
    /// close would make the kernel answer with a reset, and a reset
    /// destroys the close frame on its way (or fails the peer's write
    /// before it reads it), so a peer that broke a limit would never learn
    /// which.
    pub(crate) async fn close(&mut self, code: Option<u16>, reason: &str, linger: Duration) {
        self.queue_close(code, reason);
        let mut input = Lingering::default();
        let _ = tokio::time::timeout(linger, async {
            if poll_fn(|cx| self.poll_closing(cx, &mut input))
                .await
                .is_err()
            {
                return;
            }
            let _ = poll_fn(|cx| Pin::new(&mut self.io).poll_shutdown(cx)).await;
            let _ = poll_fn(|cx| self.poll_lingering(cx, &mut input)).await;
        })
        .await;
    }

    /// Progress of a close: flush and read at once, until everything is
    /// written and, while the peer's framing holds, its close (or end of
    /// stream) has been read: a peer that answers our close sees the TCP
    /// close only after the close handshake (RFC 6455 §7.1.1). A peer whose
    /// framing is lost will send no close this side can read, so it gets
    /// the shutdown as soon as the close frame is written.
    fn poll_closing(
        &mut self,
        cx: &mut Context<'_>,
        input: &mut Lingering,
    ) -> Poll<io::Result<()>> {
        loop {
            let flushed = match self.poll_flush(cx) {
                Poll::Ready(Ok(())) => true,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => false,
            };
            let read_enough = self.close_received || self.eof || input.read >= LINGER_BYTES;
            if read_enough || (flushed && input.discarding) {
                return if flushed {
                    Poll::Ready(Ok(()))
                } else {
                    Poll::Pending
                };
            }
            ready!(self.poll_take_input(cx, input))?;
        }
    }

    /// Progress of the lingering after the shutdown: read until the peer's
    /// close, its end of stream or [`LINGER_BYTES`].
    fn poll_lingering(
        &mut self,
        cx: &mut Context<'_>,
        input: &mut Lingering,
    ) -> Poll<io::Result<()>> {
        while !(self.close_received || self.eof || input.read >= LINGER_BYTES) {
            ready!(self.poll_take_input(cx, input))?;
        }
        Poll::Ready(Ok(()))
    }

    /// One step of reading while closing: the next frame while the peer's
    /// framing holds (to see its close), else raw bytes read and dropped
    /// (a frame over the limit or broken framing: nothing after it can be
    /// parsed, and nothing of it is kept).
    fn poll_take_input(
        &mut self,
        cx: &mut Context<'_>,
        input: &mut Lingering,
    ) -> Poll<io::Result<()>> {
        if !input.discarding {
            match self.parse() {
                Ok(Some(frame)) => {
                    // Messages and pings are dropped: the close is under way.
                    if self.on_frame(frame).is_err() {
                        input.discard();
                    }
                    return Poll::Ready(Ok(()));
                }
                Ok(None) => {}
                Err(_) => input.discard(),
            }
            if input.discarding {
                self.read = BytesMut::new();
                self.assembler.clear();
            }
        }
        let n = if input.discarding {
            ready!(poll_read_discarding(&mut self.io, cx))?
        } else {
            ready!(self.poll_read_some(cx))?
        };
        if n == 0 {
            self.eof = true;
        }
        input.read = input.read.saturating_add(n);
        Poll::Ready(Ok(()))
    }
}

/// What a close has read of the peer's input so far (lives in the close's
/// future only, not in every connection).
#[derive(Default)]
struct Lingering {
    /// Bytes read since the close began.
    read: usize,
    /// The peer's framing is lost: bytes are read and dropped unparsed.
    discarding: bool,
}

impl Lingering {
    fn discard(&mut self) {
        self.discarding = true;
    }
}

/// Read what the socket has into the per-thread scratch buffer and drop
/// it; how many bytes that was (0: end of stream).
fn poll_read_discarding<S>(io: &mut S, cx: &mut Context<'_>) -> Poll<io::Result<usize>>
where
    S: AsyncRead + Unpin,
{
    poll_read_scratch(io, cx, |_| {})
}
