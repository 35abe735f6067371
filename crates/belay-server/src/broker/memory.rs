//! Channels: publish from anywhere, subscribe with recovery.
//!
//! A [`Broker`] owns every channel's history and live fan-out. Subscribing is
//! atomic with respect to publishing: the recovery decision, the replay and
//! the live receiver are taken under one lock, so a subscriber sees every
//! offset after its position exactly once, or is told `recovered: false`.
//! Frames are encoded once per publication and shared by every subscriber.
//!
//! **Bounded channels.** Under an authenticator that lets anyone subscribe
//! to any name, subscribing is a way to make the server create channels. The
//! embedded broker therefore (1) allocates a channel's live fan-out buffer
//! only while it has subscribers (a channel that is only published to, or
//! whose subscribers left, holds just its history), (2) forgets channels
//! that nobody subscribes to and nothing was ever published on, and (3)
//! refuses a `subscribe` that would create a channel beyond
//! [`HistoryLimits::max_channels`] ([`SubscribeError::TooManyChannels`]: the
//! client gets `unsubscribed` `unavailable` and tries again later).
//! Publishing, the application's own call, always creates its channel.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as StdInstant};

use belay_proto::message::{
    encode_server, Payload, Publication, ServerMessage, StreamPosition, Subscribed,
};
use belay_proto::server::ChannelLog;
use bytes::Bytes;
use tokio::sync::broadcast;

use crate::clock::Clock;
use crate::metrics::lock;

/// One publication, encoded once for every subscriber.
#[derive(Debug, Clone)]
pub struct Delivery {
    /// Its offset within the channel's epoch.
    pub offset: u64,
    /// The `publication` frame, as JSON text.
    pub frame: Bytes,
}

/// A subscription as the broker grants it.
#[derive(Debug)]
pub struct Subscription {
    /// The confirmation to send.
    pub subscribed: Subscribed,
    /// Missed publications, in order, to send before anything live.
    pub replay: Vec<Delivery>,
    /// Live publications after the replay.
    pub live: broadcast::Receiver<Arc<Delivery>>,
}

/// Why a subscription was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscribeError {
    /// The channel does not exist and the broker holds as many channels as
    /// it may.
    #[error("too many channels")]
    TooManyChannels,
}

/// Where channels live. The embedded [`MemoryBroker`] is the default; a
/// multi-node broker must keep the same promises about offsets and history.
pub trait Broker: Send + Sync + 'static {
    /// Append `data` to `channel` and fan it out; returns the publication.
    fn publish(&self, channel: &str, data: Payload) -> Publication;

    /// Subscribe to `channel`, resuming after `since` if given; refused when
    /// the channel would be one too many.
    fn subscribe(
        &self,
        channel: &str,
        since: Option<&StreamPosition>,
    ) -> Result<Subscription, SubscribeError>;
}

/// Bounds of the in-memory history, per channel.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct HistoryLimits {
    /// Publications kept per channel.
    pub max_len: usize,
    /// How long a publication is kept.
    pub max_age: Duration,
    /// Live publications buffered per subscriber before it counts as lagging.
    pub live_buffer: usize,
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
            max_channels: 100_000,
        }
    }
}

struct Channel {
    log: ChannelLog,
    /// The live fan-out, only while someone is (or was, until the next
    /// publication notices) subscribed: its buffer is `live_buffer` slots.
    live: Option<broadcast::Sender<Arc<Delivery>>>,
}

impl Channel {
    /// Nothing would be lost by forgetting it: never published on (so a
    /// new log is identical) and nobody listening.
    fn forgettable(&self) -> bool {
        self.log.top() == 0 && self.live.as_ref().map_or(true, |l| l.receiver_count() == 0)
    }
}

/// How often a full broker looks for channels to forget, at most.
const SWEEP_EVERY: Duration = Duration::from_millis(100);

struct Channels {
    map: HashMap<String, Channel>,
    last_sweep: Option<StdInstant>,
}

/// The embedded in-memory broker.
pub struct MemoryBroker {
    channels: Mutex<Channels>,
    limits: HistoryLimits,
    epoch: String,
    clock: Clock,
}

impl std::fmt::Debug for MemoryBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBroker")
            .field("epoch", &self.epoch)
            .field("limits", &self.limits)
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
            channels: Mutex::new(Channels {
                map: HashMap::new(),
                last_sweep: None,
            }),
            limits,
            epoch: format!("{:x}", nanos & 0xffff_ffff_ffff),
            clock: Clock::new(),
        }
    }

    /// Channels held now.
    pub fn channel_count(&self) -> usize {
        lock(&self.channels).map.len()
    }

    fn new_channel(&self, name: &str) -> Channel {
        Channel {
            log: ChannelLog::new(
                name.to_owned(),
                self.epoch.clone(),
                self.limits.max_len,
                self.limits.max_age,
            ),
            live: None,
        }
    }
}

fn encode(publication: &Publication) -> Delivery {
    Delivery {
        offset: publication.offset,
        frame: Bytes::from(encode_server(&ServerMessage::Publication(
            publication.clone(),
        ))),
    }
}

impl Broker for MemoryBroker {
    fn publish(&self, channel: &str, data: Payload) -> Publication {
        let now = self.clock.now();
        let mut channels = lock(&self.channels);
        let c = match channels.map.get_mut(channel) {
            Some(c) => c,
            None => channels
                .map
                .entry(channel.to_owned())
                .or_insert_with(|| self.new_channel(channel)),
        };
        let publication = c.log.publish(now, data);
        if let Some(live) = &c.live {
            if live.receiver_count() == 0 {
                // Everyone left: give the fan-out buffer back.
                c.live = None;
            } else {
                let _ = live.send(Arc::new(encode(&publication)));
            }
        }
        publication
    }

    fn subscribe(
        &self,
        channel: &str,
        since: Option<&StreamPosition>,
    ) -> Result<Subscription, SubscribeError> {
        let now = self.clock.now();
        let mut guard = lock(&self.channels);
        let channels = &mut *guard;
        if !channels.map.contains_key(channel) && channels.map.len() >= self.limits.max_channels {
            // Full: forget what can be forgotten (not more often than
            // SWEEP_EVERY, so a flood of refused names stays cheap).
            let wall = StdInstant::now();
            if channels
                .last_sweep
                .map_or(true, |at| wall.duration_since(at) >= SWEEP_EVERY)
            {
                channels.last_sweep = Some(wall);
                channels.map.retain(|_, c| !c.forgettable());
            }
            if channels.map.len() >= self.limits.max_channels {
                return Err(SubscribeError::TooManyChannels);
            }
        }
        let c = channels
            .map
            .entry(channel.to_owned())
            .or_insert_with(|| self.new_channel(channel));
        let recovery = c.log.recover(now, since);
        let live = c
            .live
            .get_or_insert_with(|| broadcast::channel(self.limits.live_buffer.max(1)).0)
            .subscribe();
        Ok(Subscription {
            subscribed: recovery.subscribed,
            replay: recovery.replay.iter().map(encode).collect(),
            live,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn broker(max_channels: usize) -> MemoryBroker {
        MemoryBroker::new(HistoryLimits {
            max_channels,
            ..HistoryLimits::default()
        })
    }

    #[test]
    fn a_full_broker_refuses_new_channels_and_forgets_idle_ones() {
        let b = broker(2);
        let a = b.subscribe("a", None).unwrap();
        let _b = b.subscribe("b", None).unwrap();
        // Existing channels stay open to more subscribers.
        assert!(b.subscribe("a", None).is_ok());
        assert_eq!(
            b.subscribe("c", None).unwrap_err(),
            SubscribeError::TooManyChannels
        );
        // `a` is left by everyone: it is forgotten at the next sweep.
        drop(a);
        b.channels.lock().unwrap().last_sweep = None;
        assert!(b.subscribe("c", None).is_ok());
        assert_eq!(b.channel_count(), 2);
    }

    #[test]
    fn a_channel_with_history_is_kept_and_publishing_always_creates() {
        let b = broker(1);
        b.publish("news", serde_json::json!(1));
        b.publish("more", serde_json::json!(2));
        assert_eq!(b.channel_count(), 2);
        assert_eq!(
            b.subscribe("x", None).unwrap_err(),
            SubscribeError::TooManyChannels
        );
        let sub = b.subscribe("news", None).unwrap();
        assert_eq!(sub.subscribed.offset, 1);
    }

    #[test]
    fn the_fan_out_buffer_exists_only_while_subscribed() {
        let b = broker(10);
        b.publish("p", serde_json::json!(1));
        assert!(b.channels.lock().unwrap().map["p"].live.is_none());
        let mut sub = b.subscribe("p", None).unwrap();
        b.publish("p", serde_json::json!(2));
        assert_eq!(sub.live.try_recv().unwrap().offset, 2);
        drop(sub);
        b.publish("p", serde_json::json!(3));
        assert!(b.channels.lock().unwrap().map["p"].live.is_none());
    }
}
