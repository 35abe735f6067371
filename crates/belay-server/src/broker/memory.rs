//! [`MemoryBroker`]: the embedded broker, channels in memory.
//!
//! Channels live in [`SHARDS`] independently locked maps, so creating,
//! publishing to and leaving channels on one shard never waits behind work
//! on another, and no operation holds a lock over all channels. Each
//! channel is its [`ChannelLog`] (offsets, epoch, bounded history) plus the
//! [`LiveSender`]s of its subscribers; publishing encodes the frame once and
//! hands it to each sender under the shard lock, so every subscriber sees a
//! channel's publications in offset order.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use belay_proto::message::{Publication, RawJson, StreamPosition};
use belay_proto::server::{ChannelLog, Namespaces};
use belay_proto::Instant;

use super::{
    Broker, ChannelList, ChannelQuery, ChannelTally, Delivered, Delivery, HistoryError,
    HistoryFuture, HistoryPage, HistoryQuery, Joining, ListError, LiveSender, PublishError,
    Publishing, SubscribeError, SubscriberId, Subscription,
};
use crate::clock::Clock;
use crate::metrics::lock;

/// How often a full broker looks for channels to free, at most.
const SWEEP_EVERY_MS: u64 = 100;
/// Channels one sweep looks at, about (whole shards): a pass over 100,000
/// takes a dozen sweeps.
const SWEEP_BUDGET: usize = 8_192;

/// Independently locked parts of the channel map.
pub(crate) const SHARDS: usize = 32;

/// Bounds of the in-memory history and of channels.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct HistoryLimits {
    /// Publications kept per channel.
    pub max_len: usize,
    /// How long a publication is kept.
    pub max_age: Duration,
    /// Live publications buffered per connection (over all its
    /// subscriptions) before the subscription that does not fit counts as
    /// lagging.
    pub live_buffer: usize,
    /// Bytes of live publications buffered per connection, likewise.
    pub live_buffer_bytes: usize,
    /// Channels the broker holds at most (counting those with history or
    /// subscribers); a `subscribe` that would create one more is refused.
    pub max_channels: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            max_len: 1_000,
            max_age: Duration::from_secs(300),
            live_buffer: 1_024,
            live_buffer_bytes: 1 << 20,
            max_channels: 100_000,
        }
    }
}

struct Channel {
    log: ChannelLog,
    subscribers: Vec<LiveSender>,
}

impl Channel {
    /// Nothing would be lost by freeing it: nobody listens and no history
    /// is held (a later incarnation gets a new epoch if this one had
    /// publications, so old positions never resume against new offsets).
    fn forgettable(&mut self, now: Instant) -> bool {
        self.subscribers.retain(|s| !s.is_gone());
        if !self.subscribers.is_empty() {
            return false;
        }
        self.log.prune(now);
        self.log.is_empty()
    }
}

/// Channels boxed: a map keeps its capacity after a storm, and empty slots
/// then cost two pointers, not a whole channel. The key is the name the
/// channel's log and its subscribers share (one allocation per channel).
type Shard = HashMap<Arc<str>, Box<Channel>>;

/// The embedded in-memory broker.
pub struct MemoryBroker {
    shards: Box<[Mutex<Shard>]>,
    hasher: RandomState,
    /// Channels held, over all shards.
    count: AtomicUsize,
    /// When `make_room` last swept (ms on the broker's clock; `u64::MAX`:
    /// never).
    last_sweep_ms: AtomicU64,
    /// The shard the next sweep starts at.
    sweep_from: AtomicUsize,
    /// Channels freed after they had publications: a new incarnation of a
    /// channel gets a new epoch while this is non-zero.
    freed_published: AtomicU64,
    limits: HistoryLimits,
    /// Per-namespace history bounds (capped by `limits`).
    namespaces: Arc<Namespaces>,
    /// This process's epoch, shared by every channel created before the
    /// first published channel is freed.
    epoch: Arc<str>,
    clock: Clock,
}

impl std::fmt::Debug for MemoryBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBroker")
            .field("epoch", &self.epoch)
            .field("limits", &self.limits)
            .field("channels", &self.channel_count())
            .finish_non_exhaustive()
    }
}

impl MemoryBroker {
    /// A broker whose channels start a new epoch now (history does not
    /// survive the process, so each start is a new epoch).
    pub fn new(limits: HistoryLimits) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        MemoryBroker {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: RandomState::new(),
            count: AtomicUsize::new(0),
            last_sweep_ms: AtomicU64::new(u64::MAX),
            sweep_from: AtomicUsize::new(0),
            freed_published: AtomicU64::new(0),
            limits,
            namespaces: Arc::new(Namespaces::default()),
            epoch: format!("{:x}", nanos & 0xffff_ffff_ffff).into(),
            clock: Clock::new(),
        }
    }

    /// The same broker, keeping each channel's history within its
    /// namespace's bounds (themselves capped by the [`HistoryLimits`]).
    pub fn with_namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = Arc::new(namespaces);
        self
    }

    /// Channels held now.
    pub fn channel_count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    fn shard(&self, channel: &str) -> &Mutex<Shard> {
        let index = self.hasher.hash_one(channel) as usize % SHARDS;
        &self.shards[index]
    }

    /// The epoch a channel created now gets.
    fn epoch_now(&self) -> Arc<str> {
        let generation = self.freed_published.load(Ordering::Relaxed);
        if generation == 0 {
            Arc::clone(&self.epoch)
        } else {
            format!("{}.{generation:x}", self.epoch).into()
        }
    }

    fn new_channel(&self, name: Arc<str>) -> Channel {
        let epoch = self.epoch_now();
        let (max_len, max_age) =
            self.namespaces
                .history_bounds(&name, self.limits.max_len, self.limits.max_age);
        Channel {
            log: ChannelLog::new(name, epoch, max_len, max_age),
            subscribers: Vec::new(),
        }
    }

    /// Forget `channel` (its shard is locked by the caller). A shard left
    /// mostly empty after a storm gives its table back.
    fn free(&self, shard: &mut Shard, channel: &str) {
        if let Some(c) = shard.remove(channel) {
            self.count.fetch_sub(1, Ordering::Relaxed);
            if c.log.top() > 0 {
                self.freed_published.fetch_add(1, Ordering::Relaxed);
            }
        }
        if shard.capacity() > 64 && shard.len() < shard.capacity() / 4 {
            shard.shrink_to(shard.len() * 2);
        }
    }

    /// Make room for one more channel by freeing forgettable ones, one shard
    /// at a time (never all channels under one lock). Returns whether there
    /// is room now.
    fn make_room(&self, now: Instant) -> bool {
        // Channels are freed as their subscribers leave, so a sweep finds
        // little; at most one per SWEEP_EVERY, or a storm of refused names
        // would scan every channel for each refusal and starve the workers.
        let at = now.as_millis();
        let last = self.last_sweep_ms.load(Ordering::Relaxed);
        let due = last == u64::MAX || at.saturating_sub(last) >= SWEEP_EVERY_MS;
        if !due
            || self
                .last_sweep_ms
                .compare_exchange(last, at, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return false;
        }
        // A sweep looks at about SWEEP_BUDGET channels, from the shard the
        // last one stopped at: at the cap (100,000 channels) a whole pass
        // would hold this task for milliseconds while other connections
        // wait, so it is spread over several sweeps.
        let from = self.sweep_from.load(Ordering::Relaxed);
        let mut examined = 0;
        for step in 0..SHARDS {
            let index = (from + step) % SHARDS;
            if self.channel_count() < self.limits.max_channels || examined >= SWEEP_BUDGET {
                self.sweep_from.store(index, Ordering::Relaxed);
                return self.channel_count() < self.limits.max_channels;
            }
            let mut shard = lock(&self.shards[index]);
            examined += shard.len();
            let forgettable: Vec<Arc<str>> = shard
                .iter_mut()
                .filter_map(|(name, c)| c.forgettable(now).then(|| Arc::clone(name)))
                .collect();
            for name in forgettable {
                self.free(&mut shard, &name);
            }
        }
        self.channel_count() < self.limits.max_channels
    }
}

impl MemoryBroker {
    /// [`Broker::publish`], answered at once.
    pub fn publish_now(&self, channel: &str, data: RawJson) -> Result<Publication, PublishError> {
        let now = self.clock.now();
        let mut shard = lock(self.shard(channel));
        let c = match shard.get_mut(channel) {
            Some(c) => c,
            None => {
                // Publishing is the application's call: it always creates.
                self.count.fetch_add(1, Ordering::Relaxed);
                let name: Arc<str> = Arc::from(channel);
                let created = Box::new(self.new_channel(Arc::clone(&name)));
                shard.entry(name).or_insert(created)
            }
        };
        let publication = c.log.publish(now, data);
        if !c.subscribers.is_empty() {
            let delivery = Delivery::encode(&publication);
            c.subscribers.retain(|subscriber| {
                subscriber.deliver(delivery.offset, &delivery.frame) != Delivered::Gone
            });
        }
        if c.subscribers.is_empty() && c.log.is_empty() {
            // No history kept (max_len 0) and nobody listening.
            self.free(&mut shard, channel);
        }
        Ok(publication)
    }

    /// [`Broker::subscribe`], answered at once.
    pub fn subscribe_now(
        &self,
        channel: &str,
        since: Option<&StreamPosition>,
        live: LiveSender,
    ) -> Result<Subscription, SubscribeError> {
        let now = self.clock.now();
        let mut shard = lock(self.shard(channel));
        if !shard.contains_key(channel) && self.channel_count() >= self.limits.max_channels {
            drop(shard);
            if !self.make_room(now) {
                return Err(SubscribeError::TooManyChannels);
            }
            shard = lock(self.shard(channel));
        }
        let c = match shard.get_mut(channel) {
            Some(c) => c,
            None => {
                self.count.fetch_add(1, Ordering::Relaxed);
                let name = Arc::clone(live.channel());
                let created = Box::new(self.new_channel(Arc::clone(&name)));
                shard.entry(name).or_insert(created)
            }
        };
        let recovery = c.log.recover(now, since);
        c.subscribers.retain(|s| !s.is_gone());
        if c.subscribers.capacity() == 0 {
            // Most channels have one subscriber: room for exactly one first
            // (a Vec would start at four); later pushes grow it as usual.
            c.subscribers.reserve_exact(1);
        }
        c.subscribers.push(live);
        Ok(Subscription {
            subscribed: recovery.subscribed,
            replay: recovery.replay.iter().map(Delivery::encode).collect(),
        })
    }
}

impl MemoryBroker {
    /// [`Broker::history`], answered at once. A channel the broker does not
    /// hold (or frees now: nobody listens and its history aged out) has
    /// no publication, at offset 0 of the epoch it would be created in.
    pub fn history_now(
        &self,
        channel: &str,
        query: &HistoryQuery,
    ) -> Result<HistoryPage, HistoryError> {
        let now = self.clock.now();
        let mut shard = lock(self.shard(channel));
        if let Some(c) = shard.get_mut(channel) {
            if !c.forgettable(now) {
                let position = c.log.position();
                return query.select(channel, position, c.log.held(now));
            }
            self.free(&mut shard, channel);
        }
        let position = StreamPosition {
            epoch: self.epoch_now().to_string(),
            offset: 0,
        };
        query.select(channel, position, std::iter::empty())
    }

    /// [`Broker::list_channels`]: every shard in turn (never all under one
    /// lock), each channel's live subscribers.
    pub fn list_channels_now(&self, query: &ChannelQuery) -> ChannelList {
        let mut tally = ChannelTally::new(query);
        for shard in self.shards.iter() {
            let shard = lock(shard);
            for (name, c) in shard.iter() {
                let subscribers = c.subscribers.iter().filter(|s| !s.is_gone()).count();
                tally.offer(name, subscribers);
            }
        }
        tally.finish()
    }
}

impl Broker for MemoryBroker {
    fn publish(&self, channel: &str, data: RawJson) -> Publishing {
        Box::pin(std::future::ready(self.publish_now(channel, data)))
    }

    fn subscribe(
        &self,
        channel: &str,
        since: Option<&StreamPosition>,
        live: LiveSender,
    ) -> Joining {
        Joining::Now(self.subscribe_now(channel, since, live))
    }

    fn channels(&self) -> Option<usize> {
        Some(self.channel_count())
    }

    fn history(&self, channel: &str, query: HistoryQuery) -> HistoryFuture {
        Box::pin(std::future::ready(self.history_now(channel, &query)))
    }

    fn list_channels(&self, query: &ChannelQuery) -> Result<ChannelList, ListError> {
        Ok(self.list_channels_now(query))
    }

    fn unsubscribe(&self, channel: &str, subscriber: SubscriberId) {
        let now = self.clock.now();
        let mut shard = lock(self.shard(channel));
        let Some(c) = shard.get_mut(channel) else {
            return;
        };
        c.subscribers.retain(|s| s.id() != subscriber);
        if c.subscribers.is_empty() && c.subscribers.capacity() > 4 {
            c.subscribers = Vec::new();
        }
        if c.forgettable(now) {
            self.free(&mut shard, channel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::{LiveInbox, LiveItem};
    use std::sync::Arc;

    fn broker(max_channels: usize) -> MemoryBroker {
        MemoryBroker::new(HistoryLimits {
            max_channels,
            ..HistoryLimits::default()
        })
    }

    fn inbox() -> LiveInbox {
        LiveInbox::new(1_024, 1 << 20)
    }

    #[test]
    fn a_full_broker_refuses_new_channels_and_frees_left_ones_at_once() {
        let b = broker(2);
        let conn = inbox();
        let a = conn.sender(Arc::from("a"));
        let a_id = a.id();
        b.subscribe_now("a", None, a).unwrap();
        b.subscribe_now("b", None, conn.sender(Arc::from("b")))
            .unwrap();
        // Existing channels stay open to more subscribers.
        assert!(b
            .subscribe_now("a", None, conn.sender(Arc::from("a")))
            .is_ok());
        assert_eq!(
            b.subscribe_now("c", None, conn.sender(Arc::from("c")))
                .unwrap_err(),
            SubscribeError::TooManyChannels
        );
        b.unsubscribe("a", a_id);
        assert_eq!(b.channel_count(), 2, "a still has a subscriber");
        let stranger = inbox().sender(Arc::from("b")).id();
        b.unsubscribe("b", stranger);
        assert_eq!(
            b.channel_count(),
            2,
            "an unknown subscriber changes nothing"
        );
    }

    #[test]
    fn a_channel_whose_last_subscriber_leaves_is_freed() {
        let b = broker(10);
        let conn = inbox();
        let ids: Vec<_> = (0..3)
            .map(|i| {
                let live = conn.sender(Arc::from(format!("c{i}").as_str()));
                let id = live.id();
                b.subscribe_now(&format!("c{i}"), None, live).unwrap();
                id
            })
            .collect();
        assert_eq!(b.channel_count(), 3);
        for (i, id) in ids.into_iter().enumerate() {
            b.unsubscribe(&format!("c{i}"), id);
        }
        assert_eq!(b.channel_count(), 0);
    }

    #[test]
    fn a_gone_connection_frees_its_channels_when_room_is_needed() {
        let b = broker(1);
        let conn = inbox();
        b.subscribe_now("a", None, conn.sender(Arc::from("a")))
            .unwrap();
        drop(conn);
        let other = inbox();
        assert!(b
            .subscribe_now("b", None, other.sender(Arc::from("b")))
            .is_ok());
        assert_eq!(b.channel_count(), 1);
    }

    #[test]
    fn a_channel_with_history_is_kept_and_publishing_always_creates() {
        let b = broker(1);
        b.publish_now("news", serde_json::json!(1).into()).unwrap();
        b.publish_now("more", serde_json::json!(2).into()).unwrap();
        assert_eq!(b.channel_count(), 2);
        let conn = inbox();
        assert_eq!(
            b.subscribe_now("x", None, conn.sender(Arc::from("x")))
                .unwrap_err(),
            SubscribeError::TooManyChannels
        );
        let sub = b
            .subscribe_now("news", None, conn.sender(Arc::from("news")))
            .unwrap();
        assert_eq!(sub.subscribed.offset, 1);
    }

    #[test]
    fn publications_reach_every_subscriber_in_order() {
        let b = broker(10);
        let mut first = inbox();
        let mut second = inbox();
        b.subscribe_now("p", None, first.sender(Arc::from("p")))
            .unwrap();
        b.subscribe_now("p", None, second.sender(Arc::from("p")))
            .unwrap();
        for n in 1..=3 {
            b.publish_now("p", serde_json::json!(n).into()).unwrap();
        }
        for conn in [&mut first, &mut second] {
            let offsets: Vec<u64> = std::iter::from_fn(|| conn.try_next())
                .map(|item| match item {
                    LiveItem::Frame { offset, .. } => offset,
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(offsets, [1, 2, 3]);
        }
    }

    fn offsets(page: &HistoryPage) -> Vec<u64> {
        page.publications.iter().map(|p| p.offset).collect()
    }

    #[test]
    fn history_reads_what_is_held_either_way_with_the_position() {
        let b = MemoryBroker::new(HistoryLimits {
            max_len: 3,
            ..HistoryLimits::default()
        });
        for n in 1..=5 {
            b.publish_now("h", serde_json::json!(n).into()).unwrap();
        }
        let page = b.history_now("h", &HistoryQuery::new(10)).unwrap();
        assert_eq!(offsets(&page), [3, 4, 5], "the last three are held");
        assert_eq!(page.position.offset, 5);
        assert_eq!(page.publications[0].data.get(), "3");
        let newest = b
            .history_now("h", &HistoryQuery::new(2).reverse(true))
            .unwrap();
        assert_eq!(offsets(&newest), [5, 4]);
        let after = b
            .history_now("h", &HistoryQuery::new(10).since(page.position.clone()))
            .unwrap();
        assert!(after.publications.is_empty(), "nothing after the top");
        let before = b
            .history_now(
                "h",
                &HistoryQuery::new(10)
                    .since(StreamPosition {
                        epoch: page.position.epoch.clone(),
                        offset: 4,
                    })
                    .reverse(true),
            )
            .unwrap();
        assert_eq!(offsets(&before), [3]);
    }

    #[test]
    fn history_of_an_unknown_channel_is_empty_in_the_epoch_it_would_get() {
        let b = broker(10);
        let page = b.history_now("nobody", &HistoryQuery::new(10)).unwrap();
        assert_eq!((page.publications.len(), page.position.offset), (0, 0));
        assert_eq!(b.channel_count(), 0, "reading creates nothing");
        let first = b
            .publish_now("nobody", serde_json::json!(1).into())
            .unwrap();
        assert_eq!(first.epoch, page.position.epoch);
        let stale = StreamPosition {
            epoch: "another".into(),
            offset: 1,
        };
        assert_eq!(
            b.history_now("nobody", &HistoryQuery::new(1).since(stale)),
            Err(HistoryError::EpochChanged {
                current: StreamPosition {
                    epoch: first.epoch.clone(),
                    offset: 1
                }
            })
        );
        let beyond = StreamPosition {
            epoch: first.epoch,
            offset: 2,
        };
        assert!(matches!(
            b.history_now("nobody", &HistoryQuery::new(1).since(beyond)),
            Err(HistoryError::BeyondTop { .. })
        ));
    }

    #[test]
    fn list_channels_counts_live_subscribers_in_name_order() {
        let b = broker(10);
        let first = inbox();
        let second = inbox();
        for (conn, channel) in [(&first, "chat:2"), (&first, "chat:1"), (&second, "chat:1")] {
            b.subscribe_now(channel, None, conn.sender(Arc::from(channel)))
                .unwrap();
        }
        b.subscribe_now("news", None, second.sender(Arc::from("news")))
            .unwrap();
        b.publish_now("history-only", serde_json::json!(1).into())
            .unwrap();
        let chat = ChannelQuery::new(belay_proto::server::ChannelPattern::new("chat:*"));
        let list = b.list_channels_now(&chat);
        let counts: Vec<_> = list
            .channels
            .iter()
            .map(|c| (c.channel.as_str(), c.subscribers))
            .collect();
        assert_eq!(counts, [("chat:1", 2), ("chat:2", 1)]);
        drop(second);
        let all = ChannelQuery::new(belay_proto::server::ChannelPattern::new("*"));
        let list = b.list_channels_now(&all);
        assert_eq!(
            (list.matched, list.subscriptions),
            (2, 2),
            "a gone connection's subscriptions and a channel without subscribers do not count"
        );
    }

    #[test]
    fn a_freed_published_channel_comes_back_in_a_new_epoch() {
        let b = MemoryBroker::new(HistoryLimits {
            max_len: 0,
            ..HistoryLimits::default()
        });
        let first = b.publish_now("t", serde_json::json!(1).into()).unwrap();
        assert_eq!(b.channel_count(), 0, "no history and nobody listening");
        let again = b.publish_now("t", serde_json::json!(2).into()).unwrap();
        assert_ne!(again.epoch, first.epoch);
        assert_eq!(again.offset, 1);
    }
}
