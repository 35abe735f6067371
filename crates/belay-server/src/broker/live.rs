//! Live delivery from a broker to one connection: a per-connection inbox
//! that every subscription of the connection feeds.
//!
//! A channel holds one [`LiveSender`] per subscriber, a few dozen bytes; it
//! allocates nothing per channel (a tokio broadcast channel allocates its
//! whole ring up front, about 32 KB for 1 024 slots, which is what made
//! every subscribed channel cost 32 KB). Publishing pushes the shared,
//! once-encoded frame into each subscriber's inbox. The inbox is bounded:
//! at most `max_frames` frames and `max_bytes` bytes wait in it (at least one
//! frame always fits). A delivery that does not fit marks that subscription
//! *lagged*: it gets no more frames, and the connection tells the client
//! (`unsubscribed` `lagged`), which resubscribes from its position so the
//! history replays what it missed (or says it cannot). Nothing is lost
//! silently.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use belay_proto::message::{Codec, ErrorBody};
use bytes::Bytes;
use tokio::sync::Notify;

use super::{Delivery, SubscribeError, Subscription};
use crate::metrics::lock;

/// Identifies one subscription server-wide (a replacing `subscribe` gets a
/// new one, so frames of the replaced subscription are recognised as stale).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriberId(u64);

impl SubscriberId {
    /// Its number (unique in the process).
    pub fn get(self) -> u64 {
        self.0
    }

    /// The id whose number is `raw`.
    pub(crate) fn from_raw(raw: u64) -> SubscriberId {
        SubscriberId(raw)
    }

    fn next() -> SubscriberId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        SubscriberId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What [`LiveSender::deliver`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delivered {
    /// Queued for the connection.
    Queued,
    /// The subscriber is behind (now or before): the frame was not queued
    /// and the connection will tell its client.
    Lagged,
    /// The connection is gone: drop this sender.
    Gone,
}

/// An item a connection takes out of its inbox.
#[derive(Debug)]
pub(crate) enum LiveItem {
    /// The next publication of a subscription.
    Frame {
        channel: Arc<str>,
        subscriber: SubscriberId,
        offset: u64,
        frame: Bytes,
    },
    /// The subscription fell behind and gets nothing more.
    Lagged {
        channel: Arc<str>,
        subscriber: SubscriberId,
    },
    /// A broker that answered [`Joining::Later`](super::Joining::Later)
    /// answered now.
    Joined {
        subscriber: SubscriberId,
        /// Boxed: it carries the replay, and it is rare.
        answer: Box<Result<Subscription, SubscribeError>>,
    },
    /// The broker ended the subscription ([`LiveSender::end`]).
    Ended {
        channel: Arc<str>,
        subscriber: SubscriberId,
        /// Boxed: every queued item is as large as the largest kind, and
        /// this one is rare.
        error: Box<ErrorBody>,
    },
}

#[derive(Debug, Default)]
struct State {
    items: VecDeque<LiveItem>,
    bytes: usize,
    /// Subscriptions marked lagged or ended whose notice is queued: they
    /// get no more frames.
    stopped: Vec<SubscriberId>,
}

#[derive(Debug)]
struct Inbox {
    state: Mutex<State>,
    notify: Notify,
    closed: AtomicBool,
    max_frames: usize,
    max_bytes: usize,
    /// Which of a delivery's frames the connection takes.
    codec: Codec,
}

/// The broker's handle on one subscriber: where its channel's publications
/// go. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LiveSender {
    inbox: Arc<Inbox>,
    channel: Arc<str>,
    id: SubscriberId,
}

impl LiveSender {
    /// This subscription.
    pub fn id(&self) -> SubscriberId {
        self.id
    }

    /// The channel this subscription is to (a broker may keep this very
    /// name as its key, so the name is stored once).
    pub fn channel(&self) -> &Arc<str> {
        &self.channel
    }

    /// Whether the connection is gone (the broker may drop the sender).
    pub fn is_gone(&self) -> bool {
        self.inbox.closed.load(Ordering::Acquire)
    }

    /// Queue `delivery` for the connection, in the connection's codec.
    pub fn deliver(&self, delivery: &Delivery) -> Delivered {
        let (offset, frame) = (delivery.offset, delivery.frame_in(self.inbox.codec));
        if self.is_gone() {
            return Delivered::Gone;
        }
        let mut state = lock(&self.inbox.state);
        if state.stopped.contains(&self.id) {
            return Delivered::Lagged;
        }
        let fits = state.items.is_empty()
            || (state.items.len() < self.inbox.max_frames
                && state.bytes.saturating_add(frame.len()) <= self.inbox.max_bytes);
        let item = if fits {
            state.bytes += frame.len();
            LiveItem::Frame {
                channel: Arc::clone(&self.channel),
                subscriber: self.id,
                offset,
                frame: frame.clone(),
            }
        } else {
            state.stopped.push(self.id);
            LiveItem::Lagged {
                channel: Arc::clone(&self.channel),
                subscriber: self.id,
            }
        };
        state.items.push_back(item);
        drop(state);
        self.inbox.notify.notify_one();
        if fits {
            Delivered::Queued
        } else {
            Delivered::Lagged
        }
    }

    /// Grant the subscription a broker answered with
    /// [`Joining::Later`](super::Joining::Later): `subscription`'s
    /// confirmation and replay reach the connection ahead of every frame
    /// delivered after this call. The replay is not counted against the
    /// inbox's bounds (the broker's history bounds it).
    pub fn grant(&self, subscription: Subscription) {
        self.answer(Ok(subscription));
    }

    /// Refuse the subscription a broker answered with
    /// [`Joining::Later`](super::Joining::Later); deliver nothing more to
    /// this sender.
    pub fn refuse(&self, error: SubscribeError) {
        self.answer(Err(error));
    }

    fn answer(&self, answer: Result<Subscription, SubscribeError>) {
        if self.is_gone() {
            return;
        }
        lock(&self.inbox.state).items.push_back(LiveItem::Joined {
            subscriber: self.id,
            answer: Box::new(answer),
        });
        self.inbox.notify.notify_one();
    }

    /// End this subscription from the broker's side: it gets no more
    /// frames, and the connection tells its client `unsubscribed` with
    /// `error` (for example `unavailable` when the store behind the channel
    /// is lost), after the frames already queued. The broker should also
    /// forget the sender. Ending a subscription twice, or one that lagged,
    /// does nothing more.
    pub fn end(&self, error: ErrorBody) {
        if self.is_gone() {
            return;
        }
        let mut state = lock(&self.inbox.state);
        if state.stopped.contains(&self.id) {
            return;
        }
        state.stopped.push(self.id);
        state.items.push_back(LiveItem::Ended {
            channel: Arc::clone(&self.channel),
            subscriber: self.id,
            error: Box::new(error),
        });
        drop(state);
        self.inbox.notify.notify_one();
    }
}

/// A connection's end: every live frame of its subscriptions, in the order
/// they were published on each channel.
#[derive(Debug)]
pub(crate) struct LiveInbox(Arc<Inbox>);

impl LiveInbox {
    /// An inbox holding at most `max_frames` frames and `max_bytes` bytes,
    /// for a connection that speaks `codec`.
    pub(crate) fn new(max_frames: usize, max_bytes: usize, codec: Codec) -> LiveInbox {
        LiveInbox(Arc::new(Inbox {
            state: Mutex::new(State::default()),
            notify: Notify::new(),
            closed: AtomicBool::new(false),
            max_frames: max_frames.max(1),
            max_bytes,
            codec,
        }))
    }

    /// A sender for a new subscription to `channel`.
    pub(crate) fn sender(&self, channel: Arc<str>) -> LiveSender {
        LiveSender {
            inbox: Arc::clone(&self.0),
            channel,
            id: SubscriberId::next(),
        }
    }

    /// The next item if one is queued.
    pub(crate) fn try_next(&mut self) -> Option<LiveItem> {
        let mut state = lock(&self.0.state);
        let item = state.items.pop_front()?;
        match &item {
            LiveItem::Frame { frame, .. } => state.bytes -= frame.len(),
            LiveItem::Lagged { subscriber, .. } | LiveItem::Ended { subscriber, .. } => {
                state.stopped.retain(|id| id != subscriber);
            }
            LiveItem::Joined { .. } => {}
        }
        // A burst is over, or the ring held only a notice (a join's answer,
        // an end): give it back. Frames keep a small ring, since the next
        // publication needs it again.
        let notice = !matches!(item, LiveItem::Frame { .. });
        if state.items.is_empty() && (state.items.capacity() > 64 || notice) {
            state.items = VecDeque::new();
        }
        Some(item)
    }

    /// The next item. Cancel-safe.
    pub(crate) async fn next(&mut self) -> LiveItem {
        loop {
            if let Some(item) = self.try_next() {
                return item;
            }
            self.0.notify.notified().await;
        }
    }
}

impl Drop for LiveInbox {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Publication `offset` whose frames are `n` bytes (the binary one
    /// marked, to tell them apart).
    fn frame(offset: u64, n: usize) -> Delivery {
        Delivery {
            offset,
            frame: Bytes::from(vec![b'x'; n]),
            binary: Bytes::from(vec![b'b'; n]),
        }
    }

    fn inbox(max_frames: usize, max_bytes: usize) -> LiveInbox {
        LiveInbox::new(max_frames, max_bytes, Codec::Json)
    }

    #[test]
    fn each_inbox_takes_the_frame_of_its_connections_codec() {
        let mut json = inbox(10, 1_000);
        let mut binary = LiveInbox::new(10, 1_000, Codec::Binary);
        let delivery = frame(1, 3);
        json.sender(Arc::from("a")).deliver(&delivery);
        binary.sender(Arc::from("a")).deliver(&delivery);
        for (inbox, want) in [(&mut json, b"xxx"), (&mut binary, b"bbb")] {
            match inbox.try_next() {
                Some(LiveItem::Frame { frame, .. }) => assert_eq!(&frame[..], want),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn frames_come_out_in_order_with_their_subscription() {
        let mut inbox = inbox(10, 1_000);
        let a = inbox.sender(Arc::from("a"));
        assert_eq!(a.deliver(&frame(1, 3)), Delivered::Queued);
        assert_eq!(a.deliver(&frame(2, 3)), Delivered::Queued);
        for want in [1, 2] {
            match inbox.try_next() {
                Some(LiveItem::Frame {
                    offset, subscriber, ..
                }) => {
                    assert_eq!((offset, subscriber), (want, a.id()));
                }
                other => panic!("{other:?}"),
            }
        }
        assert!(inbox.try_next().is_none());
    }

    #[test]
    fn a_full_inbox_lags_the_subscription_once_and_refuses_more() {
        let mut inbox = inbox(2, 1_000);
        let a = inbox.sender(Arc::from("a"));
        let b = inbox.sender(Arc::from("b"));
        assert_eq!(a.deliver(&frame(1, 1)), Delivered::Queued);
        assert_eq!(a.deliver(&frame(2, 1)), Delivered::Queued);
        assert_eq!(b.deliver(&frame(1, 1)), Delivered::Lagged);
        assert_eq!(b.deliver(&frame(2, 1)), Delivered::Lagged);
        let kinds: Vec<bool> = std::iter::from_fn(|| inbox.try_next())
            .map(|item| matches!(item, LiveItem::Lagged { .. }))
            .collect();
        assert_eq!(kinds, [false, false, true]);
    }

    #[test]
    fn the_byte_bound_counts_but_one_frame_always_fits() {
        let mut inbox = inbox(100, 10);
        let a = inbox.sender(Arc::from("a"));
        assert_eq!(a.deliver(&frame(1, 50)), Delivered::Queued);
        assert_eq!(a.deliver(&frame(2, 1)), Delivered::Lagged);
        assert!(inbox.try_next().is_some());
    }

    #[test]
    fn an_ended_subscription_gets_its_notice_after_what_is_queued_and_nothing_more() {
        let mut inbox = inbox(10, 1_000);
        let a = inbox.sender(Arc::from("a"));
        assert_eq!(a.deliver(&frame(1, 1)), Delivered::Queued);
        a.end(ErrorBody::new("unavailable", "down"));
        a.end(ErrorBody::new("unavailable", "twice"));
        assert_eq!(a.deliver(&frame(2, 1)), Delivered::Lagged);
        assert!(matches!(
            inbox.try_next(),
            Some(LiveItem::Frame { offset: 1, .. })
        ));
        match inbox.try_next() {
            Some(LiveItem::Ended {
                error, subscriber, ..
            }) => {
                assert_eq!((error.message.as_str(), subscriber), ("down", a.id()));
            }
            other => panic!("{other:?}"),
        }
        assert!(inbox.try_next().is_none());
    }

    #[test]
    fn a_dropped_inbox_makes_its_senders_gone() {
        let inbox = inbox(10, 10);
        let a = inbox.sender(Arc::from("a"));
        drop(inbox);
        assert!(a.is_gone());
        assert_eq!(a.deliver(&frame(1, 1)), Delivered::Gone);
    }

    #[test]
    fn an_inbox_that_held_only_a_notice_gives_its_ring_back() {
        let mut inbox = inbox(10, 1_000);
        let a = inbox.sender(Arc::from("a"));
        a.refuse(SubscribeError::Unavailable("down".into()));
        assert!(matches!(inbox.try_next(), Some(LiveItem::Joined { .. })));
        assert_eq!(lock(&inbox.0.state).items.capacity(), 0);
        // A frame's ring stays for the next one.
        assert_eq!(a.deliver(&frame(1, 1)), Delivered::Queued);
        assert!(matches!(inbox.try_next(), Some(LiveItem::Frame { .. })));
        assert!(lock(&inbox.0.state).items.capacity() > 0);
    }
}
