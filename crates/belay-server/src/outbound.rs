//! A connection's bounded queue of encoded frames waiting for room in the
//! socket's write buffer.
//!
//! It is the connection task's own (nothing else writes to it, so it needs
//! no lock and no wake-up), allocates nothing until a frame waits, and is
//! bounded in frames and in bytes, per connection and server-wide:
//! `try_send` fails when the connection's [`Limits::check_outbound`]
//! refuses (too many frames or bytes waiting; one frame always fits), or
//! when the core's fair share of the server-wide budget does
//! ([`fair_share_admits`]). The core treats a refusal as a slow consumer
//! (close 4009).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use belay_proto::server::{fair_share_admits, fair_share_room, Limits, OutboundRoom};
use bytes::Bytes;

/// One connection's waiting frames.
#[derive(Debug)]
pub(crate) struct Outbound {
    frames: VecDeque<Bytes>,
    bytes: usize,
    /// Bytes queued by every connection of the server (given back when the
    /// queue is dropped).
    total: Arc<AtomicUsize>,
}

impl Drop for Outbound {
    fn drop(&mut self) {
        self.total.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl Outbound {
    /// An empty queue counted in the server-wide `total`.
    pub(crate) fn new(total: Arc<AtomicUsize>) -> Self {
        Outbound {
            frames: VecDeque::new(),
            bytes: 0,
            total,
        }
    }

    /// Queue `frame` within `limits` and the server-wide `budget` bytes, or
    /// give it back if it does not fit.
    pub(crate) fn try_send(
        &mut self,
        frame: Bytes,
        limits: &Limits,
        budget: usize,
    ) -> Result<(), Bytes> {
        let len = frame.len();
        if limits
            .check_outbound(self.frames.len(), self.bytes, len)
            .is_err()
        {
            return Err(frame);
        }
        if !fair_share_admits(self.bytes, len, self.total.load(Ordering::Relaxed), budget) {
            return Err(frame);
        }
        self.bytes = self.bytes.saturating_add(len);
        self.total.fetch_add(len, Ordering::Relaxed);
        self.frames.push_back(frame);
        Ok(())
    }

    /// What [`try_send`](Self::try_send) would still take under `limits`
    /// and the server-wide `budget`, in frames and bytes (what a resume's
    /// replay is measured against).
    pub(crate) fn room(&self, limits: &Limits, budget: usize) -> OutboundRoom {
        let frames = limits.outbound_queue().saturating_sub(self.frames.len());
        let own = limits.outbound_bytes().saturating_sub(self.bytes);
        let server_wide = fair_share_room(self.bytes, self.total.load(Ordering::Relaxed), budget);
        OutboundRoom::new(frames, own.min(server_wide))
    }

    /// Whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// The next frame if one is queued.
    pub(crate) fn try_recv(&mut self) -> Option<Bytes> {
        let frame = self.frames.pop_front()?;
        self.bytes -= frame.len();
        self.total.fetch_sub(frame.len(), Ordering::Relaxed);
        if self.frames.is_empty() && self.frames.capacity() > 0 {
            // Drained: an idle connection holds no buffer.
            self.frames = VecDeque::new();
        }
        Some(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use belay_proto::server::FAIR_SHARE;

    fn limits(frames: usize, bytes: usize) -> Limits {
        let mut limits = Limits::default();
        limits.set_outbound_queue(frames).set_outbound_bytes(bytes);
        limits
    }

    #[test]
    fn the_queue_is_bounded_in_bytes_and_one_frame_always_fits() {
        let limits = limits(100, 10);
        let mut queue = Outbound::new(Arc::new(AtomicUsize::new(0)));
        queue
            .try_send(Bytes::from(vec![0; 50]), &limits, usize::MAX)
            .unwrap();
        assert!(queue
            .try_send(Bytes::from_static(b"x"), &limits, usize::MAX)
            .is_err());
        assert!(queue.try_recv().is_some());
        queue
            .try_send(Bytes::from(vec![0; 6]), &limits, usize::MAX)
            .unwrap();
        queue
            .try_send(Bytes::from(vec![0; 4]), &limits, usize::MAX)
            .unwrap();
        assert!(queue
            .try_send(Bytes::from_static(b"x"), &limits, usize::MAX)
            .is_err());
    }

    #[test]
    fn the_server_wide_budget_spares_connections_within_their_fair_share() {
        let total = Arc::new(AtomicUsize::new(0));
        let limits = Limits::default();
        let budget = 2 * FAIR_SHARE;
        let mut hog = Outbound::new(Arc::clone(&total));
        let mut victim = Outbound::new(Arc::clone(&total));
        while hog
            .try_send(Bytes::from(vec![0; 4096]), &limits, budget)
            .is_ok()
        {}
        assert!(total.load(Ordering::Relaxed) >= budget - 4096);
        // The victim's small queue still fits; only growth past its fair
        // share would be refused while the budget is spent.
        victim
            .try_send(Bytes::from(vec![0; 1000]), &limits, budget)
            .unwrap();
        assert!(victim.try_recv().is_some());
        drop(hog);
        assert_eq!(
            total.load(Ordering::Relaxed),
            0,
            "a dropped queue gives its bytes back"
        );
    }

    #[test]
    fn a_full_queue_refuses_and_frames_come_out_in_order() {
        let limits = limits(2, 1 << 20);
        let mut queue = Outbound::new(Arc::new(AtomicUsize::new(0)));
        queue
            .try_send(Bytes::from_static(b"a"), &limits, usize::MAX)
            .unwrap();
        queue
            .try_send(Bytes::from_static(b"b"), &limits, usize::MAX)
            .unwrap();
        assert!(queue
            .try_send(Bytes::from_static(b"c"), &limits, usize::MAX)
            .is_err());
        assert_eq!(queue.try_recv(), Some(Bytes::from_static(b"a")));
        assert_eq!(queue.try_recv(), Some(Bytes::from_static(b"b")));
        assert_eq!(queue.try_recv(), None);
        assert!(queue.is_empty());
    }
}
