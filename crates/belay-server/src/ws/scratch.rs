//! Reads go through one 16 KiB scratch buffer per worker thread, so an idle
//! connection keeps no read buffer of its own.

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Size of the per-thread read scratch buffer.
const SCRATCH: usize = 16 * 1024;

thread_local! {
    static SCRATCH_BUF: RefCell<Box<[u8]>> = RefCell::new(vec![0; SCRATCH].into_boxed_slice());
}

/// Read what the socket has into the per-thread scratch buffer (a buffer
/// of its own if that one is in use) and hand the bytes to `take`; how
/// many there were (0: end of stream).
pub(super) fn poll_read_scratch<S>(
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
