//! The body of an SSE response: a byte buffer shared by the connection's
//! driver, which writes events into it, and hyper, which takes them out as
//! the socket accepts them. hyper polls the body only when it can write,
//! so what waits here is what the socket has not taken: the driver bounds
//! it as it bounds a WebSocket's write buffer (`ws::HIGH_WATER`).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use bytes::{Bytes, BytesMut};
use http_body::{Body, Frame};

use crate::metrics::lock;

#[derive(Debug, Default)]
struct State {
    buf: BytesMut,
    /// The writer will write nothing more: the body ends once `buf` is out.
    finished: bool,
    /// hyper dropped the body (the peer went away, or the response ended).
    dropped: bool,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

/// The driver's end.
#[derive(Debug)]
pub(crate) struct PipeWriter(Arc<Mutex<State>>);

/// hyper's end: the response body.
#[derive(Debug)]
pub(crate) struct PipeBody(Arc<Mutex<State>>);

/// A new pipe.
pub(crate) fn pipe() -> (PipeWriter, PipeBody) {
    let state = Arc::new(Mutex::new(State::default()));
    (PipeWriter(Arc::clone(&state)), PipeBody(state))
}

impl PipeWriter {
    /// Bytes written and not yet taken by hyper.
    pub(crate) fn buffered(&self) -> usize {
        lock(&self.0).buf.len()
    }

    /// Append `bytes` (nothing once the body was dropped or finished).
    pub(crate) fn write(&self, bytes: &[u8]) {
        let mut state = lock(&self.0);
        if state.dropped || state.finished {
            return;
        }
        state.buf.extend_from_slice(bytes);
        if let Some(reader) = state.reader.take() {
            reader.wake();
        }
    }

    /// Forget what hyper has not taken.
    pub(crate) fn discard(&self) {
        lock(&self.0).buf = BytesMut::new();
    }

    /// End the body after what is written.
    pub(crate) fn finish(&self) {
        let mut state = lock(&self.0);
        state.finished = true;
        if let Some(reader) = state.reader.take() {
            reader.wake();
        }
    }

    /// Whether hyper dropped the body.
    #[cfg(test)]
    pub(crate) fn is_dropped(&self) -> bool {
        lock(&self.0).dropped
    }

    /// Ready when hyper has taken everything written (`Err` if it dropped
    /// the body first), or, with `below`, when less than that is left.
    /// Also ready with `Err` when the body is dropped while nothing waits.
    pub(crate) fn poll_drained(&self, cx: &mut Context<'_>, below: usize) -> Poll<Result<(), ()>> {
        let mut state = lock(&self.0);
        if state.dropped {
            return Poll::Ready(Err(()));
        }
        if state.buf.len() < below.max(1) {
            return Poll::Ready(Ok(()));
        }
        state.writer = Some(cx.waker().clone());
        Poll::Pending
    }

    /// Register to be woken when hyper drops the body.
    pub(crate) fn watch_drop(&self, cx: &mut Context<'_>) -> bool {
        let mut state = lock(&self.0);
        if !state.dropped {
            state.writer = Some(cx.waker().clone());
        }
        state.dropped
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Body for PipeBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let mut state = lock(&self.0);
        if !state.buf.is_empty() {
            let chunk = state.buf.split().freeze();
            // Idle again: give the allocation back (as the WebSocket's
            // write buffer does).
            state.buf = BytesMut::new();
            if let Some(writer) = state.writer.take() {
                writer.wake();
            }
            return Poll::Ready(Some(Ok(Frame::data(chunk))));
        }
        if state.finished {
            return Poll::Ready(None);
        }
        state.reader = Some(cx.waker().clone());
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        let state = lock(&self.0);
        state.finished && state.buf.is_empty()
    }
}

impl Drop for PipeBody {
    fn drop(&mut self) {
        let mut state = lock(&self.0);
        state.dropped = true;
        state.buf = BytesMut::new();
        if let Some(writer) = state.writer.take() {
            writer.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;

    use http_body_util::BodyExt;

    use super::*;

    #[tokio::test]
    async fn what_is_written_comes_out_of_the_body_in_order_then_it_ends() {
        let (writer, mut body) = pipe();
        writer.write(b"a");
        writer.write(b"b");
        assert_eq!(writer.buffered(), 2);
        let chunk = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&chunk[..], b"ab");
        assert_eq!(writer.buffered(), 0);
        writer.write(b"c");
        writer.finish();
        let chunk = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&chunk[..], b"c");
        assert!(body.frame().await.is_none());
    }

    #[tokio::test]
    async fn a_dropped_body_fails_the_writer_and_takes_nothing_more() {
        let (writer, body) = pipe();
        writer.write(b"abc");
        drop(body);
        assert!(writer.is_dropped());
        assert_eq!(poll_fn(|cx| writer.poll_drained(cx, 1)).await, Err(()));
        writer.write(b"more");
        assert_eq!(writer.buffered(), 0);
    }
}
