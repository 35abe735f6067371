//! One direction of a connection pair: read, apply the toxics, write.
//!
//! A reader and a writer joined by a bounded queue of chunks
//! ([`QUEUE`] × [`CHUNK`] bytes at most), both in the pair's task. Each
//! consults the direction's [`Plan`] as it goes. The reader stops reading
//! while the path is held and throws away what a discard drops; the writer
//! holds chunks while held, delays them (latency, jitter), cuts them
//! (slicer), paces them (bandwidth) and counts them against data limits.
//! EOF and read errors are held while the path is held, like the bytes
//! before them; an EOF in a discarded direction is withheld until the
//! discard is lifted; a slow close delays the FIN.

use std::collections::HashMap;
use std::io;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};
use tokio::time::{sleep, sleep_until, Duration, Instant};

use crate::fault::Direction;
use crate::plan::{Conn, Plan};
use crate::state::{Shared, State};

/// Largest chunk read at once.
const CHUNK: usize = 16 * 1024;
/// Chunks queued between reader and writer (bounds buffering per direction).
const QUEUE: usize = 16;
/// Bandwidth pacing granularity: one slice per this fraction of a second.
const SLICES_PER_SEC: u64 = 20;

/// Why a direction stopped before its EOF was forwarded.
#[derive(Debug)]
pub(crate) enum Stop {
    /// A socket failed (for instance it was reset).
    Failed(io::Error),
    /// A `limit_data` toxic's budget is spent: close the connection.
    LimitReached,
}

impl From<io::Error> for Stop {
    fn from(error: io::Error) -> Stop {
        Stop::Failed(error)
    }
}

struct Chunk {
    bytes: Vec<u8>,
    read_at: Instant,
}

/// One direction of one connection, as its two halves see it.
#[derive(Clone, Copy)]
pub(crate) struct Way<'a> {
    pub(crate) direction: Direction,
    pub(crate) conn: Conn,
    pub(crate) shared: &'a Shared,
}

impl Way<'_> {
    fn plan(&self, state: &State) -> Plan {
        Plan::of(state, &self.conn, self.direction)
    }

    /// Wait until the path is no longer held (or the proxy is gone).
    async fn wait_unheld(&self, states: &mut watch::Receiver<State>) {
        let _ = states.wait_for(|s| !self.plan(s).hold).await;
    }
}

/// Forward `from` to `to` until EOF (then shut `to` down) or a stop.
pub(crate) async fn forward<R, W>(from: R, to: W, way: Way<'_>) -> Result<(), Stop>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::try_join!(read_side(from, tx, way), write_side(rx, to, way))?;
    Ok(())
}

async fn read_side<R: AsyncRead + Unpin>(
    mut from: R,
    tx: mpsc::Sender<Chunk>,
    way: Way<'_>,
) -> Result<(), Stop> {
    let mut states = way.shared.watch();
    loop {
        way.wait_unheld(&mut states).await;
        let mut bytes = vec![0; CHUNK];
        let n = match from.read(&mut bytes).await {
            Ok(0) => {
                // A FIN cannot be dropped without ending the stream: withhold
                // it while this direction is discarded. Dropping `tx` tells
                // the writer.
                let _ = states.wait_for(|s| !way.plan(s).discard).await;
                return Ok(());
            }
            Ok(n) => n,
            Err(e) => {
                way.wait_unheld(&mut states).await;
                return Err(e.into());
            }
        };
        if way.plan(&states.borrow()).discard {
            way.shared.counters.dropped(way.direction, n);
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
    way: Way<'_>,
) -> Result<(), Stop> {
    let mut states = way.shared.watch();
    let mut rng = way.conn.rng(way.direction);
    let mut limits = Limits::default();
    let mut next_free = Instant::now();
    let mut next_slice = Instant::now();
    while let Some(chunk) = rx.recv().await {
        way.wait_unheld(&mut states).await;
        let delay = way.plan(&states.borrow()).delay(&mut rng);
        sleep_until(chunk.read_at + delay).await;
        let mut rest = &chunk.bytes[..];
        while !rest.is_empty() {
            // Pace first, then look: a hold or discard set meanwhile wins.
            let pacing = way.plan(&states.borrow());
            if pacing.slicer.is_some() {
                sleep_until(next_slice).await;
            }
            if pacing.bytes_per_sec.is_some() {
                sleep_until(next_free).await;
            }
            way.wait_unheld(&mut states).await;
            let plan = way.plan(&states.borrow());
            if plan.discard {
                way.shared.counters.dropped(way.direction, rest.len());
                break;
            }
            let mut n = rest.len();
            if let Some(slicer) = plan.slicer {
                n = n.min(slicer.next_len(&mut rng));
                next_slice = Instant::now() + slicer.pause;
            }
            if let Some(bytes_per_sec) = plan.bytes_per_sec {
                let slice = usize::try_from(bytes_per_sec / SLICES_PER_SEC).unwrap_or(usize::MAX);
                n = n.min(slice.max(1));
                let cost = Duration::from_secs_f64(n as f64 / bytes_per_sec as f64);
                next_free = next_free.max(Instant::now()) + cost;
            }
            let allowed = limits.allowed(&plan);
            n = n.min(allowed);
            to.write_all(&rest[..n]).await?;
            way.shared.counters.forwarded(way.direction, n);
            limits.sent += n as u64;
            rest = &rest[n..];
            if n == allowed {
                return Err(Stop::LimitReached);
            }
        }
    }
    way.wait_unheld(&mut states).await;
    let slow_close = way.plan(&states.borrow()).slow_close;
    sleep(slow_close).await;
    way.wait_unheld(&mut states).await;
    to.shutdown().await?;
    Ok(())
}

/// Bytes sent so far and where each data limit started counting.
#[derive(Default)]
struct Limits {
    sent: u64,
    baselines: HashMap<u64, u64>,
}

impl Limits {
    /// How many more bytes the plan's limits allow (`usize::MAX`: no limit).
    fn allowed(&mut self, plan: &Plan) -> usize {
        let mut allowed = u64::MAX;
        for &(id, bytes) in &plan.limits {
            let since = *self.baselines.entry(id).or_insert(self.sent);
            allowed = allowed.min(bytes.saturating_sub(self.sent - since));
        }
        usize::try_from(allowed).unwrap_or(usize::MAX)
    }
}
