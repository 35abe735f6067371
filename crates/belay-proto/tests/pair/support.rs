//! What the pair scenarios share: a started pair and readings of a client's
//! events.

use std::time::Duration;

use belay_proto::testing::{ClientId, Pair};
use belay_proto::{Config, Event};

/// The one client of a pair made by `Pair::new`.
pub(crate) const C: ClientId = ClientId::FIRST;

/// A pair whose one client has started, subscribed to `channels` and is
/// ready (1 s of virtual time).
pub(crate) fn ready_pair(config: Config, seed: u64, channels: &[&str]) -> Pair {
    let mut pair = Pair::new(config, seed);
    pair.command(C, |s, now| s.start(now)).unwrap();
    for channel in channels {
        pair.command(C, |s, now| s.subscribe(now, channel)).unwrap();
    }
    pair.run_for(Duration::from_secs(1));
    assert!(pair.client(C).session.is_ready());
    pair
}

/// The offsets of `channel` a client received, in order.
pub(crate) fn offsets(pair: &Pair, client: ClientId, channel: &str) -> Vec<u64> {
    pair.events(client)
        .iter()
        .filter_map(|(_, e)| match e {
            Event::Publication(p) if p.channel == channel => Some(p.offset),
            _ => None,
        })
        .collect()
}

/// How many of a client's events match.
pub(crate) fn count(pair: &Pair, client: ClientId, f: impl Fn(&Event) -> bool) -> usize {
    pair.events(client).iter().filter(|(_, e)| f(e)).count()
}
