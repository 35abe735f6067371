//! What the pair scenarios share: a started pair and readings of a client's
//! events and of the server's log.

use std::time::Duration;

use belay_proto::testing::{ClientId, Pair, ServerRecord};
use belay_proto::{Config, Event, Instant, RequestId, RequestOutcome};

/// The one client of a pair made by `Pair::new`.
pub(crate) const C: ClientId = ClientId::FIRST;

/// A pair whose one client has started, subscribed to `channels` and is
/// ready (1 s of virtual time).
pub(crate) fn ready_pair(config: Config, seed: u64, channels: &[&str]) -> Pair {
    let mut pair = Pair::new(config, seed);
    start(&mut pair, C, channels);
    pair
}

/// Start `client`, subscribe it to `channels`, and run until it is ready
/// (1 s of virtual time).
pub(crate) fn start(pair: &mut Pair, client: ClientId, channels: &[&str]) {
    pair.command(client, |s, now| s.start(now)).unwrap();
    for channel in channels {
        pair.command(client, |s, now| s.subscribe(now, channel))
            .unwrap();
    }
    pair.run_for(Duration::from_secs(1));
    assert!(pair.client(client).session.is_ready());
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

/// When a client's first event that matches came, if it did.
pub(crate) fn first_at(
    pair: &Pair,
    client: ClientId,
    f: impl Fn(&Event) -> bool,
) -> Option<Instant> {
    let mut events = pair.events(client).iter();
    events.find(|(_, e)| f(e)).map(|(at, _)| *at)
}

/// How the request `id` of a client settled, if it did.
pub(crate) fn outcome(pair: &Pair, client: ClientId, id: RequestId) -> Option<RequestOutcome> {
    pair.events(client).iter().find_map(|(_, e)| match e {
        Event::Response {
            id: settled,
            outcome,
        } if *settled == id => Some(outcome.clone()),
        _ => None,
    })
}

/// Whether a client emitted a disconnect (or a failed connect).
pub(crate) fn is_disconnect(event: &Event) -> bool {
    matches!(
        event,
        Event::Disconnected { .. } | Event::ConnectFailed { .. }
    )
}

/// The close codes the server sent, in order.
pub(crate) fn server_closes(pair: &Pair) -> Vec<u16> {
    let closes = pair.server_log().iter();
    closes
        .filter_map(|r| match r {
            ServerRecord::Closed { code, .. } => Some(*code),
            _ => None,
        })
        .collect()
}

/// Connections the server accepted.
pub(crate) fn accepted(pair: &Pair) -> usize {
    let log = pair.server_log().iter();
    log.filter(|r| matches!(r, ServerRecord::Accepted { .. }))
        .count()
}
