//! [`MemoryBroker`]: the embedded broker, channels in memory.
//!
//! Channels live in [`SHARDS`] independently locked maps, so creating,
//! publishing to and leaving channels on one shard never waits behind work
//! on another, and no operation holds a lock over all channels. Each
//! channel is its [`ChannelLog`] (offsets, epoch, bounded history) plus the
//! [`LiveSender`]s of its subscribers; publishing encodes the frame once and
//! hands it to each sender under the shard lock, so every subscriber sees a
//! channel's publications in offset order.
//!
//! History is bounded per channel (length, age, `max_bytes_per_channel`)
//! and over all channels ([`HistoryBudget`](budget::HistoryBudget),
//! `max_bytes`): when full, the oldest publications go, and a resume past
//! them is answered `recovered: false`.

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

mod budget;

use budget::HistoryBudget;

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
    /// Bytes of history one channel holds at most (each publication
    /// counted as its data plus about 40 bytes): the oldest go first.
    pub max_bytes_per_channel: usize,
    /// Bytes of history all channels hold at most (each publication also
    /// counted with its place in the eviction order, about 50 bytes): the
    /// oldest go first, whichever channel they are on.
    pub max_bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            max_len: 1_000,
            max_age: Duration::from_secs(300),
            live_buffer: 1_024,
            live_buffer_bytes: 1 << 20,
            max_channels: 100_000,
            max_bytes_per_channel: 4 << 20,
            max_bytes: 256 << 20,
        }
    }
}

struct Channel {
    log: ChannelLog,
    subscribers: Vec<LiveSender>,
}

impl Channel {
    /// The channel's name, as its log holds it (shared, not copied).
    fn log_name(&self) -> &Arc<str> {
        self.log.channel_name()
    }

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
    /// The server-wide byte bound on history.
    budget: HistoryBudget,
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
        let nanos = crate::clock::unix_nanos();
        MemoryBroker {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: RandomState::new(),
            count: AtomicUsize::new(0),
            last_sweep_ms: AtomicU64::new(u64::MAX),
            sweep_from: AtomicUsize::new(0),
            freed_published: AtomicU64::new(0),
            limits,
            budget: HistoryBudget::new(limits.max_bytes),
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

    /// Bytes of history held now, over all channels (as `max_bytes`
    /// counts them).
    pub fn history_bytes(&self) -> usize {
        self.budget.held()
    }

    /// Run `f` on `c`, keeping the server-wide count of history bytes in
    /// step with whatever it does to the log (publish, prune, recover).
    fn tracked<R>(&self, c: &mut Channel, f: impl FnOnce(&mut Channel) -> R) -> R {
        let before = c.log.bytes();
        let result = f(c);
        self.budget.changed(before, c.log.bytes());
        result
    }

    /// Evict the oldest publications, over all channels, until the history
    /// is within `max_bytes`. Called with no shard locked: it locks the
    /// shards of the channels it evicts from, one at a time.
    fn within_budget(&self, now: Instant) {
        while let Some((name, offset)) = self.budget.over() {
            let mut shard = lock(self.shard(&name));
            let Some(c) = shard.get_mut(&*name) else {
                continue;
            };
            // A channel freed and made again may hold this offset anew (in
            // a new epoch): it loses that entry early, which bounds memory
            // and stays exact (what is held still ends at the top).
            let forget = self.tracked(c, |c| {
                c.log.evict_through(offset);
                c.forgettable(now)
            });
            if forget {
                self.free(&mut shard, &name);
            }
        }
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
            log: ChannelLog::new(name, epoch, max_len, max_age)
                .with_max_bytes(self.limits.max_bytes_per_channel),
            subscribers: Vec::new(),
        }
    }

    /// Forget `channel` (its shard is locked by the caller). A shard left
    /// mostly empty after a storm gives its table back.
    fn free(&self, shard: &mut Shard, channel: &str) {
        if let Some(c) = shard.remove(channel) {
            self.count.fetch_sub(1, Ordering::Relaxed);
            self.budget.changed(c.log.bytes(), 0);
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
                .filter_map(|(name, c)| {
                    self.tracked(c, |c| c.forgettable(now))
                        .then(|| Arc::clone(name))
                })
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
        let publication = self.tracked(c, |c| c.log.publish(now, data));
        if !c.log.is_empty() {
            // The publication just kept is the newest held.
            self.budget.kept(c.log_name(), publication.offset);
        }
        if !c.subscribers.is_empty() {
            let delivery = Delivery::encode(&publication);
            c.subscribers
                .retain(|subscriber| subscriber.deliver(&delivery) != Delivered::Gone);
        }
        if c.subscribers.is_empty() && c.log.is_empty() {
            // No history kept (max_len 0) and nobody listening.
            self.free(&mut shard, channel);
        }
        drop(shard);
        self.within_budget(now);
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
        let recovery = self.tracked(c, |c| c.log.recover(now, since));
        // Subscribers whose connection is gone are swept when the list
        // would grow (and at every publish): sweeping at every subscribe
        // made a channel's n subscribes cost n² under its shard's lock.
        if c.subscribers.len() == c.subscribers.capacity() {
            c.subscribers.retain(|s| !s.is_gone());
        }
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
            if !self.tracked(c, |c| c.forgettable(now)) {
                let position = c.log.position();
                return self.tracked(c, |c| query.select(channel, position, c.log.held(now)));
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

    fn history_bytes(&self) -> Option<usize> {
        Some(self.budget.held())
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
        // Order among subscribers does not matter. The gone ones leave by
        // themselves (a closing connection leaves every subscription), so
        // only an empty channel is looked at: a sweep at every leave made
        // n leaves cost n².
        if let Some(at) = c.subscribers.iter().rposition(|s| s.id() == subscriber) {
            c.subscribers.swap_remove(at);
        }
        if !c.subscribers.is_empty() {
            return;
        }
        if c.subscribers.capacity() > 4 {
            c.subscribers = Vec::new();
        }
        if self.tracked(c, |c| c.forgettable(now)) {
            self.free(&mut shard, channel);
        }
    }
}

#[cfg(test)]
mod tests;
