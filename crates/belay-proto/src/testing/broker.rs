//! [`ModelBroker`]: channels in memory, built on the core's `ChannelLog`,
//! with subscribers named by (connection, subscription).

use std::collections::HashMap;
use std::time::Duration;

use crate::message::{encode_server, RawJson, ServerMessage, StreamPosition};
use crate::server::{ChannelLog, JoinAnswer};
use crate::time::Instant;

use super::records::ConnectionId;

/// A subscriber: which server connection, and which subscription of it.
pub type Subscriber = (ConnectionId, u64);

/// Channels with bounded history and their live subscribers.
#[derive(Debug)]
pub struct ModelBroker {
    channels: HashMap<String, (ChannelLog, Vec<Subscriber>)>,
    next_subscription: u64,
    history: usize,
    max_age: Duration,
}

impl ModelBroker {
    /// A broker keeping `history` publications per channel for `max_age`.
    pub fn new(history: usize, max_age: Duration) -> Self {
        ModelBroker {
            channels: HashMap::new(),
            next_subscription: 1,
            history,
            max_age,
        }
    }

    fn channel(&mut self, name: &str) -> &mut (ChannelLog, Vec<Subscriber>) {
        let (history, max_age) = (self.history, self.max_age);
        self.channels
            .entry(name.to_owned())
            .or_insert_with(|| (ChannelLog::new(name, "e1", history, max_age), Vec::new()))
    }

    /// Subscribe `connection` to `channel`, resuming after `since`: the
    /// answer for the server connection (its replay encoded).
    pub fn join(
        &mut self,
        now: Instant,
        connection: ConnectionId,
        channel: &str,
        since: Option<&StreamPosition>,
    ) -> JoinAnswer<String> {
        let subscription = self.next_subscription;
        self.next_subscription += 1;
        let (log, subscribers) = self.channel(channel);
        let recovery = log.recover(now, since);
        subscribers.push((connection, subscription));
        JoinAnswer::Joined {
            subscribed: recovery.subscribed,
            subscription,
            replay: recovery
                .replay
                .into_iter()
                .map(|p| {
                    let offset = p.offset;
                    (offset, encode_server(&ServerMessage::Publication(p)))
                })
                .collect(),
        }
    }

    /// Remove one subscriber.
    pub fn leave(&mut self, channel: &str, subscription: u64) {
        if let Some((_, subscribers)) = self.channels.get_mut(channel) {
            subscribers.retain(|(_, s)| *s != subscription);
        }
    }

    /// Publish `data` on `channel`: its offset, and each live subscriber
    /// with the encoded frame to hand it.
    pub fn publish(
        &mut self,
        now: Instant,
        channel: &str,
        data: RawJson,
    ) -> (u64, Vec<(Subscriber, String)>) {
        let (log, subscribers) = self.channel(channel);
        let publication = log.publish(now, data);
        let offset = publication.offset;
        let frame = encode_server(&ServerMessage::Publication(publication));
        let deliveries = subscribers.iter().map(|s| (*s, frame.clone())).collect();
        (offset, deliveries)
    }

    /// Live subscribers over all channels.
    pub fn subscribers(&self) -> usize {
        self.channels.values().map(|(_, s)| s.len()).sum()
    }
}
