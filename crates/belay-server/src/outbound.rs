//! A connection's bounded queue of encoded frames for the writer.
//!
//! Like the order mailbox, it allocates nothing until a frame is queued
//! (a tokio channel allocates a block of slots up front), and it is bounded:
//! `try_send` fails when `capacity` frames are waiting, which the server
//! treats as a slow consumer.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::Notify;

use crate::metrics::lock;

#[derive(Debug)]
struct Queue {
    frames: Mutex<VecDeque<Bytes>>,
    notify: Notify,
    capacity: usize,
}

/// Queues frames for one connection. Cheap to clone.
#[derive(Debug, Clone)]
pub(crate) struct Outbound(Arc<Queue>);

/// The writer's end.
#[derive(Debug)]
pub(crate) struct OutboundReceiver(Arc<Queue>);

/// A queue holding at most `capacity` frames (at least one).
pub(crate) fn outbound(capacity: usize) -> (Outbound, OutboundReceiver) {
    let queue = Arc::new(Queue {
        frames: Mutex::new(VecDeque::new()),
        notify: Notify::new(),
        capacity: capacity.max(1),
    });
    (Outbound(Arc::clone(&queue)), OutboundReceiver(queue))
}

impl Outbound {
    /// Queue `frame`, or give it back if the queue is full.
    pub(crate) fn try_send(&self, frame: Bytes) -> Result<(), Bytes> {
        let mut frames = lock(&self.0.frames);
        if frames.len() >= self.0.capacity {
            return Err(frame);
        }
        frames.push_back(frame);
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
        lock(&self.0.frames).is_empty()
    }

    /// The next frame if one is queued.
    pub(crate) fn try_recv(&mut self) -> Option<Bytes> {
        lock(&self.0.frames).pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_queue_refuses_and_frames_come_out_in_order() {
        let (tx, mut rx) = outbound(2);
        tx.try_send(Bytes::from_static(b"a")).unwrap();
        tx.try_send(Bytes::from_static(b"b")).unwrap();
        assert!(tx.try_send(Bytes::from_static(b"c")).is_err());
        assert_eq!(rx.recv().await, Bytes::from_static(b"a"));
        assert_eq!(rx.try_recv(), Some(Bytes::from_static(b"b")));
        assert_eq!(rx.try_recv(), None);
    }

    #[tokio::test]
    async fn a_frame_queued_while_waiting_wakes_the_writer() {
        let (tx, mut rx) = outbound(4);
        let writer = tokio::spawn(async move { rx.recv().await });
        tokio::task::yield_now().await;
        tx.try_send(Bytes::from_static(b"x")).unwrap();
        assert_eq!(writer.await.unwrap(), Bytes::from_static(b"x"));
    }
}
