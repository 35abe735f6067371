//! Channels: publish from anywhere, subscribe with recovery.
//!
//! A [`Broker`] owns every channel's history and live fan-out. Subscribing is
//! atomic with respect to publishing: the recovery decision, the replay and
//! the live receiver are taken under one lock, so a subscriber sees every
//! offset after its position exactly once, or is told `recovered: false`.
//! Frames are encoded once per publication and shared by every subscriber.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

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

/// Where channels live. The embedded [`MemoryBroker`] is the default; a
/// multi-node broker must keep the same promises about offsets and history.
pub trait Broker: Send + Sync + 'static {
    /// Append `data` to `channel` and fan it out; returns the publication.
    fn publish(&self, channel: &str, data: Payload) -> Publication;

    /// Subscribe to `channel`, resuming after `since` if given.
    fn subscribe(&self, channel: &str, since: Option<&StreamPosition>) -> Subscription;
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
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            max_len: 1_000,
            max_age: Duration::from_secs(300),
            live_buffer: 1_024,
        }
    }
}

struct Channel {
    log: ChannelLog,
    live: broadcast::Sender<Arc<Delivery>>,
}

/// The embedded in-memory broker.
pub struct MemoryBroker {
    channels: Mutex<HashMap<String, Channel>>,
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
            channels: Mutex::new(HashMap::new()),
            limits,
            epoch: format!("{:x}", nanos & 0xffff_ffff_ffff),
            clock: Clock::new(),
        }
    }

    fn with_channel<T>(&self, name: &str, f: impl FnOnce(&mut Channel) -> T) -> T {
        let mut channels = lock(&self.channels);
        let channel = channels.entry(name.to_owned()).or_insert_with(|| Channel {
            log: ChannelLog::new(
                name.to_owned(),
                self.epoch.clone(),
                self.limits.max_len,
                self.limits.max_age,
            ),
            live: broadcast::channel(self.limits.live_buffer.max(1)).0,
        });
        f(channel)
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
        self.with_channel(channel, |c| {
            let publication = c.log.publish(now, data);
            // No receivers is fine: nobody is subscribed right now.
            let _ = c.live.send(Arc::new(encode(&publication)));
            publication
        })
    }

    fn subscribe(&self, channel: &str, since: Option<&StreamPosition>) -> Subscription {
        let now = self.clock.now();
        self.with_channel(channel, |c| {
            let recovery = c.log.recover(now, since);
            Subscription {
                subscribed: recovery.subscribed,
                replay: recovery.replay.iter().map(encode).collect(),
                live: c.live.subscribe(),
            }
        })
    }
}
