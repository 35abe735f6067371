//! A load client that comes back after a loss: a belay-client [`Client`],
//! which runs the core's `Session` (reconnect, resubscribe from the last
//! position, ordered publications without duplicates), from one source
//! address, dialing the targets in turn. The suite reads what happened
//! from [`Client::events`] and the subscriptions' items.

use std::net::IpAddr;

use belay_client::{Client, ClientBuilder, ClientEvent};
use belay_proto::{Config, Event};
use tokio::sync::broadcast;

use super::target::Target;

/// A client of `targets` (the first, then the others after each loss),
/// from `source`, with `config`, WebSocket only (the suites measure the
/// WebSocket path), with jitter from `seed`. Build it with `connect`.
///
/// # Panics
///
/// With no target.
pub fn builder(
    targets: &[Target],
    source: Option<IpAddr>,
    config: Config,
    seed: u64,
) -> ClientBuilder {
    let (first, others) = targets.split_first().expect("at least one target");
    let mut builder = Client::builder(first.url())
        .config(config)
        .fallback(None)
        .seed(seed);
    for other in others {
        builder = builder.failover_url(other.url());
    }
    match source {
        Some(source) => builder.local_address(source),
        None => builder,
    }
}

/// The next event of the core's session from `events`; `None` once the
/// client has stopped. Falling behind (the feed is bounded) is an error:
/// the suite would miss what it counts.
pub async fn next_event(
    events: &mut broadcast::Receiver<ClientEvent>,
) -> Option<Result<Event, String>> {
    loop {
        match events.recv().await {
            Ok(ClientEvent::Session(event)) => return Some(Ok(event)),
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(n)) => {
                return Some(Err(format!("fell {n} events behind the client")))
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}
