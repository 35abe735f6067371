//! [`HistoryBudget`]: the memory broker's server-wide byte bound on
//! history. Every publication a channel keeps is queued here in the order
//! it was kept; when the bytes held over all channels pass the bound, the
//! broker evicts from the front of the queue, so the oldest publications
//! go first, whichever channel they are on.
//!
//! ```text
//!  queue   (a,1) (b,1) (a,2) (c,1) …      held: data + entries + queue
//!  over the bound ──▶ pop (a,1): evict channel a through offset 1
//! ```
//!
//! A publication that already went another way (its age, its channel's
//! length or own byte bound, the channel freed) leaves a stale queue entry
//! behind; each queue entry counts [`QUEUED`] bytes against the bound, so
//! stale entries are bounded too and are dropped as they reach the front.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::metrics::lock;

/// Bytes one queue entry is counted as: its slot (a name pointer and an
/// offset) with room for the queue's growth.
pub(super) const QUEUED: usize = 2 * std::mem::size_of::<(Arc<str>, u64)>();

/// The server-wide byte bound and the order publications were kept in.
#[derive(Debug)]
pub(super) struct HistoryBudget {
    max: usize,
    /// Bytes held: every channel's [`ChannelLog::bytes`] plus [`QUEUED`]
    /// per queue entry.
    ///
    /// [`ChannelLog::bytes`]: belay_proto::server::ChannelLog::bytes
    held: AtomicUsize,
    /// Publications kept, oldest first: their channel and offset. One
    /// lock for all shards (the order is global), held only for one push
    /// or one pop and never while taking a shard's lock, so a shard's lock
    /// may be held while taking it and no cycle can form.
    order: Mutex<VecDeque<(Arc<str>, u64)>>,
}

impl HistoryBudget {
    pub(super) fn new(max: usize) -> Self {
        HistoryBudget {
            max,
            held: AtomicUsize::new(0),
            order: Mutex::new(VecDeque::new()),
        }
    }

    /// Bytes held now, over all channels.
    pub(super) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// A channel's log went from `before` to `after` bytes.
    pub(super) fn changed(&self, before: usize, after: usize) {
        if after >= before {
            self.held.fetch_add(after - before, Ordering::Relaxed);
        } else {
            // Never below zero, whatever the interleaving of updates.
            let _ = self
                .held
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                    Some(held.saturating_sub(before - after))
                });
        }
    }

    /// `channel` kept its publication at `offset`.
    pub(super) fn kept(&self, channel: &Arc<str>, offset: u64) {
        lock(&self.order).push_back((Arc::clone(channel), offset));
        self.changed(0, QUEUED);
    }

    /// While over the bound: the oldest kept publication, to evict (its
    /// channel through its offset). `None` once within the bound, or when
    /// nothing is queued.
    pub(super) fn over(&self) -> Option<(Arc<str>, u64)> {
        if self.held() <= self.max {
            return None;
        }
        let mut order = lock(&self.order);
        let oldest = order.pop_front()?;
        let len = order.len();
        if order.capacity() > 1_024 && len < order.capacity() / 4 {
            order.shrink_to(len * 2);
        }
        drop(order);
        self.changed(QUEUED, 0);
        Some(oldest)
    }
}
