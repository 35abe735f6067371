//! One direction of a connection pair: read, apply the fault, write.
//!
//! A reader and a writer joined by a bounded queue of chunks
//! ([`QUEUE`] × [`CHUNK`] bytes at most), both in the pair's task. The reader
//! stops reading while the path is frozen and discards what a half-open fault
//! drops; the writer holds chunks while frozen, delays them under latency and
//! paces them under a bandwidth cap. EOF and read errors are held while the
//! path is frozen, like the bytes before them; an EOF in a dropped direction
//! is held until the half-open fault is lifted.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::{sleep_until, Duration, Instant};

use crate::fault::{Direction, Fault};
use crate::state::{wait_while, Shared};

/// Largest chunk read at once.
const CHUNK: usize = 16 * 1024;
/// Chunks queued between reader and writer (bounds buffering per direction).
const QUEUE: usize = 16;
/// Bandwidth pacing granularity: one slice per this fraction of a second.
const SLICES_PER_SEC: u64 = 20;

struct Chunk {
    bytes: Vec<u8>,
    read_at: Instant,
}

/// Forward `from` to `to` until EOF (then shut `to` down) or an error.
pub(crate) async fn forward<R, W>(
    from: R,
    to: W,
    direction: Direction,
    shared: &Shared,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::try_join!(
        read_side(from, tx, direction, shared),
        write_side(rx, to, direction, shared)
    )?;
    Ok(())
}

async fn read_side<R: AsyncRead + Unpin>(
    mut from: R,
    tx: mpsc::Sender<Chunk>,
    direction: Direction,
    shared: &Shared,
) -> io::Result<()> {
    let mut faults = shared.watch();
    loop {
        wait_while(&mut faults, Fault::frozen).await;
        let mut bytes = vec![0; CHUNK];
        let n = match from.read(&mut bytes).await {
            Ok(0) => {
                // A FIN cannot be dropped without ending the stream: withhold
                // it while this direction is dropped. Dropping `tx` tells the
                // writer.
                let _ = faults.wait_for(|s| !s.fault.drops(direction)).await;
                return Ok(());
            }
            Ok(n) => n,
            Err(e) => {
                wait_while(&mut faults, Fault::frozen).await;
                return Err(e);
            }
        };
        if faults.borrow().fault.drops(direction) {
            shared.counters.dropped(direction, n);
            continue;
        }
        bytes.truncate(n);
        let chunk = Chunk {
            bytes,
            read_at: Instant::now(),
        };
        if tx.send(chunk).await.is_err() {
            return Ok(());
        }
    }
}

async fn write_side<W: AsyncWrite + Unpin>(
    mut rx: mpsc::Receiver<Chunk>,
    mut to: W,
    direction: Direction,
    shared: &Shared,
) -> io::Result<()> {
    let mut faults = shared.watch();
    let mut next_free = Instant::now();
    while let Some(chunk) = rx.recv().await {
        wait_while(&mut faults, Fault::frozen).await;
        let fault = faults.borrow().fault;
        if let Fault::Latency { ms } = fault {
            sleep_until(chunk.read_at + Duration::from_millis(ms)).await;
        }
        let mut rest = &chunk.bytes[..];
        while !rest.is_empty() {
            wait_while(&mut faults, Fault::frozen).await;
            let fault = faults.borrow().fault;
            if fault.drops(direction) {
                shared.counters.dropped(direction, rest.len());
                break;
            }
            let n = match fault {
                Fault::Bandwidth { bytes_per_sec } => {
                    sleep_until(next_free).await;
                    let slice = usize::try_from(bytes_per_sec / SLICES_PER_SEC)
                        .unwrap_or(usize::MAX)
                        .clamp(1, rest.len());
                    let cost = Duration::from_secs_f64(slice as f64 / bytes_per_sec as f64);
                    next_free = next_free.max(Instant::now()) + cost;
                    slice
                }
                _ => rest.len(),
            };
            to.write_all(&rest[..n]).await?;
            shared.counters.forwarded(direction, n);
            rest = &rest[n..];
        }
    }
    wait_while(&mut faults, Fault::frozen).await;
    to.shutdown().await
}
