//! Service down as a broker wrapper: subscribes are refused while it lasts,
//! and the subscriptions granted before it are ended when it starts.

use std::sync::Arc;

use belay_proto::message::{ErrorBody, RawJson, StreamPosition};
use belay_server::broker::{
    Broker, ChannelList, ChannelQuery, HistoryFuture, HistoryQuery, Joining, ListError, LiveSender,
    OutcomeStore, PresenceStore, Publishing, SubscribeError, SubscriberId,
};

use super::{lock, Bench, FaultBench};

/// A [`Broker`] that goes down with the bench's service: while it is down,
/// `subscribe` is refused (`unavailable`, "service down"); when it goes
/// down, every subscription it granted is ended the same way
/// ([`LiveSender::end`]), so clients resubscribe once it is back, from
/// their position. Publishing goes on (the history keeps what clients
/// will ask for).
pub struct ServiceBroker {
    inner: Arc<dyn Broker>,
    bench: Arc<Bench>,
}

impl std::fmt::Debug for ServiceBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceBroker").finish_non_exhaustive()
    }
}

impl FaultBench {
    /// `inner`, going down with this bench's service.
    pub fn wrap_broker(&self, inner: Arc<dyn Broker>) -> ServiceBroker {
        ServiceBroker {
            inner,
            bench: Arc::clone(&self.bench),
        }
    }

    /// The service went down: end every subscription granted before.
    pub(super) fn end_subscriptions(&self) {
        let ended = std::mem::take(&mut *lock(&self.bench.subscriptions));
        for live in ended.into_values() {
            live.end(ErrorBody::new("unavailable", "service down"));
        }
    }
}

impl Broker for ServiceBroker {
    fn publish(&self, channel: &str, data: RawJson) -> Publishing {
        self.inner.publish(channel, data)
    }

    fn subscribe(
        &self,
        channel: &str,
        since: Option<&StreamPosition>,
        live: LiveSender,
    ) -> Joining {
        // Held across the subscribe, so the service cannot go down between
        // the check and the tracking.
        let mut tracked = lock(&self.bench.subscriptions);
        if *self.bench.service_down.borrow() {
            return Joining::Now(Err(SubscribeError::Unavailable("service down".into())));
        }
        let id = live.id();
        let kept = live.clone();
        let joining = self.inner.subscribe(channel, since, live);
        if !matches!(joining, Joining::Now(Err(_))) {
            tracked.insert(id, kept);
        }
        joining
    }

    fn unsubscribe(&self, channel: &str, subscriber: SubscriberId) {
        {
            let mut tracked = lock(&self.bench.subscriptions);
            tracked.remove(&subscriber);
            // After a storm of subscriptions the map gives its room back.
            if tracked.capacity() > 64 && tracked.len() < tracked.capacity() / 4 {
                tracked.shrink_to_fit();
            }
        }
        self.inner.unsubscribe(channel, subscriber);
    }

    fn channels(&self) -> Option<usize> {
        self.inner.channels()
    }

    fn history_bytes(&self) -> Option<usize> {
        self.inner.history_bytes()
    }

    fn outcomes(&self) -> Option<Arc<dyn OutcomeStore>> {
        self.inner.outcomes()
    }

    fn history(&self, channel: &str, query: HistoryQuery) -> HistoryFuture {
        self.inner.history(channel, query)
    }

    fn list_channels(&self, query: &ChannelQuery) -> Result<ChannelList, ListError> {
        self.inner.list_channels(query)
    }

    /// The wrapped broker's presence (on Redis: every node's members), not
    /// a store of this process's own.
    fn presence(&self) -> Option<Arc<dyn PresenceStore>> {
        self.inner.presence()
    }
}

#[cfg(test)]
mod tests {
    use belay_server::broker::{MemoryBroker, MemoryPresence};

    use super::*;

    /// A broker with a presence store of its own (as the Redis broker has).
    struct Shared(MemoryBroker, Arc<MemoryPresence>);

    impl Broker for Shared {
        fn publish(&self, channel: &str, data: RawJson) -> Publishing {
            self.0.publish(channel, data)
        }
        fn subscribe(
            &self,
            channel: &str,
            since: Option<&StreamPosition>,
            live: LiveSender,
        ) -> Joining {
            self.0.subscribe(channel, since, live)
        }
        fn unsubscribe(&self, channel: &str, subscriber: SubscriberId) {
            self.0.unsubscribe(channel, subscriber);
        }
        fn presence(&self) -> Option<Arc<dyn PresenceStore>> {
            Some(Arc::clone(&self.1) as Arc<dyn PresenceStore>)
        }
    }

    #[test]
    fn the_wrapped_brokers_presence_is_the_demos() {
        let store = Arc::new(MemoryPresence::new(1 << 20));
        let inner = Shared(
            MemoryBroker::new(belay_server::broker::HistoryLimits::default()),
            Arc::clone(&store),
        );
        let wrapped = FaultBench::new().wrap_broker(Arc::new(inner));
        let given = wrapped.presence().expect("forwarded");
        let expected: Arc<dyn PresenceStore> = store;
        assert!(Arc::ptr_eq(&given, &expected));
    }
}
