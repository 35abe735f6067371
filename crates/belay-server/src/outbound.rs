//! A connection's bounded queue of encoded frames for the writer.
//!
//! Like the order mailbox, it allocates nothing until a frame is queued
//! (a tokio channel allocates a block of slots up front), and it is bounded
//! in frames and in bytes, per connection and server-wide: `try_send` fails
//! when the connection's [`Limits::check_outbound`] refuses (too many frames
//! or bytes waiting; one frame always fits), or when the frame would take
//! the connection past [`FAIR_SHARE`] bytes while every connection together
//! already holds the server-wide budget. The server treats a refusal as a
//! slow consumer (close 4009). A connection whose client reads keeps a
//! short queue, so another client's backlog never gets it closed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use belay_proto::server::Limits;
use bytes::Bytes;
use tokio::sync::Notify;

use crate::metrics::lock;

/// Bytes a connection may always queue, whatever the server-wide total.
pub(crate) const FAIR_SHARE: usize = 64 * 1024;

#[derive(Debug, Default)]
struct Frames {
    frames: VecDeque<Bytes>,
    bytes: usize,
}

#[derive(Debug)]
struct Queue {
    frames: Mutex<Frames>,
    notify: Notify,
    /// Shared by every connection of the server (a copy each would cost
    /// more than an idle connection's whole queue).
    limits: Arc<Limits>,
    /// Bytes queued by every connection of the server, and its budget.
    total: Arc<AtomicUsize>,
    total_budget: usize,
}

impl Drop for Queue {
    fn drop(&mut self) {
        let bytes = lock(&self.frames).bytes;
        self.total.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// Queues frames for one connection. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Outbound(Arc<Queue>);

/// The writer's end.
#[derive(Debug)]
pub(crate) struct OutboundReceiver(Arc<Queue>);

/// A queue bounded by `limits` (`outbound_queue` frames, `outbound_bytes`
/// bytes) and by the server-wide `total_budget` bytes counted in `total`.
pub(crate) fn outbound(
    limits: &Arc<Limits>,
    total: Arc<AtomicUsize>,
    total_budget: usize,
) -> (Outbound, OutboundReceiver) {
    let queue = Arc::new(Queue {
        frames: Mutex::new(Frames::default()),
        notify: Notify::new(),
        limits: Arc::clone(limits),
        total,
        total_budget,
    });
    (Outbound(Arc::clone(&queue)), OutboundReceiver(queue))
}

impl Outbound {
    /// Queue `frame`, or give it back if the queue is full.
    pub(crate) fn try_send(&self, frame: Bytes) -> Result<(), Bytes> {
        let mut frames = lock(&self.0.frames);
        let len = frame.len();
        if self
            .0
            .limits
            .check_outbound(frames.frames.len(), frames.bytes, len)
            .is_err()
        {
            return Err(frame);
        }
        let after = frames.bytes.saturating_add(len);
        if after > FAIR_SHARE && self.0.total.load(Ordering::Relaxed) + len > self.0.total_budget {
            return Err(frame);
        }
        frames.bytes = after;
        self.0.total.fetch_add(len, Ordering::Relaxed);
        frames.frames.push_back(frame);
        drop(frames);
        self.0.notify.notify_one();
        Ok(())
    }
}

impl OutboundReceiver {
    /// The next frame. Cancel-safe.
    pub(crate) async fn recv(&mut self) -> Bytes {
        loop {
            if let Some(frame) = self.try_recv() {
                return frame;
            }
            self.0.notify.notified().await;
        }
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        lock(&self.0.frames).frames.is_empty()
    }

    /// The next frame if one is queued.
    pub(crate) fn try_recv(&mut self) -> Option<Bytes> {
        let mut frames = lock(&self.0.frames);
        let frame = frames.frames.pop_front()?;
        frames.bytes -= frame.len();
        self.0.total.fetch_sub(frame.len(), Ordering::Relaxed);
        if frames.frames.is_empty() && frames.frames.capacity() > 64 {
            frames.frames = VecDeque::new();
        }
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue(frames: usize, bytes: usize, budget: usize) -> (Outbound, OutboundReceiver) {
        let mut limits = Limits::default();
        limits.set_outbound_queue(frames).set_outbound_bytes(bytes);
        outbound(&Arc::new(limits), Arc::new(AtomicUsize::new(0)), budget)
    }

    #[test]
    fn the_queue_is_bounded_in_bytes_and_one_frame_always_fits() {
        let (tx, mut rx) = queue(100, 10, usize::MAX);
        tx.try_send(Bytes::from(vec![0; 50])).unwrap();
        assert!(tx.try_send(Bytes::from_static(b"x")).is_err());
        assert!(rx.try_recv().is_some());
        tx.try_send(Bytes::from(vec![0; 6])).unwrap();
        tx.try_send(Bytes::from(vec![0; 4])).unwrap();
        assert!(tx.try_send(Bytes::from_static(b"x")).is_err());
    }

    #[test]
    fn the_server_wide_budget_spares_connections_within_their_fair_share() {
        let total = Arc::new(AtomicUsize::new(0));
        let limits = Arc::new(Limits::default());
        let (hog, _hog_rx) = outbound(&limits, Arc::clone(&total), 2 * FAIR_SHARE);
        let (victim, mut victim_rx) = outbound(&limits, Arc::clone(&total), 2 * FAIR_SHARE);
        while hog.try_send(Bytes::from(vec![0; 4096])).is_ok() {}
        assert!(total.load(Ordering::Relaxed) >= 2 * FAIR_SHARE - 4096);
        // The victim's small queue still fits; only growth past its fair
        // share would be refused while the budget is spent.
        victim.try_send(Bytes::from(vec![0; 1000])).unwrap();
        assert!(victim_rx.try_recv().is_some());
        drop(hog);
        drop(_hog_rx);
        assert_eq!(
            total.load(Ordering::Relaxed),
            0,
            "a dropped queue gives its bytes back"
        );
    }

    #[tokio::test]
    async fn a_full_queue_refuses_and_frames_come_out_in_order() {
        let (tx, mut rx) = queue(2, 1 << 20, usize::MAX);
        tx.try_send(Bytes::from_static(b"a")).unwrap();
        tx.try_send(Bytes::from_static(b"b")).unwrap();
        assert!(tx.try_send(Bytes::from_static(b"c")).is_err());
        assert_eq!(rx.recv().await, Bytes::from_static(b"a"));
        assert_eq!(rx.try_recv(), Some(Bytes::from_static(b"b")));
        assert_eq!(rx.try_recv(), None);
    }

    #[tokio::test]
    async fn a_frame_queued_while_waiting_wakes_the_writer() {
        let (tx, mut rx) = queue(4, 1 << 20, usize::MAX);
        let writer = tokio::spawn(async move { rx.recv().await });
        tokio::task::yield_now().await;
        tx.try_send(Bytes::from_static(b"x")).unwrap();
        assert_eq!(writer.await.unwrap(), Bytes::from_static(b"x"));
    }
}
