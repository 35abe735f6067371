//! The web UI's live feed: once a second, this node's figures (connections
//! open, deliveries, publications and refusals per second) go into a ring
//! of the last [`KEPT`](crate::admin_state::KEPT) samples (`GET /admin/samples`) and are published
//! on channel [`CHANNEL`] of a hub: a Belay server of the admin's own, on
//! the embedded broker, that the page's browser client reaches at
//! `GET /admin/live` (a WebSocket, behind the admin guard). The hub is
//! apart from the application's server: its connections are not the
//! application's (they count in neither `/metrics` nor its limits), and
//! nothing the application's clients do reaches the feed.
//!
//! The sampler starts with the first admin router built inside a Tokio
//! runtime (or the first request to the UI), stops when the server is
//! gone, and closes the hub's connections once the server has drained.
//! The hub itself is built when a console first connects: a server nobody
//! watches keeps only the ring.

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::response::Response;
use axum::routing::any;
use axum::Router;
use serde_json::json;

use crate::admin_state::{Live, Sample};
use crate::shared::{Lifecycle, Shared};
use crate::Server;

/// How often a sample is taken.
pub(crate) const EVERY: Duration = Duration::from_secs(1);
/// The hub's channel of samples.
pub(crate) const CHANNEL: &str = "stats";

/// `server`'s feed, started now if it was not (inside a Tokio runtime).
pub(crate) fn started(server: &Server) -> &Live<Server> {
    server.shared.admin.live.get_or_init(|| {
        tokio::spawn(sample(Arc::downgrade(&server.shared)));
        Live::default()
    })
}

/// `GET /admin/live`, and the feed started if a runtime runs.
pub(super) fn routes(server: &Server) -> Router<Server> {
    if tokio::runtime::Handle::try_current().is_ok() {
        started(server);
    }
    Router::new().route("/admin/live", any(upgrade))
}

async fn upgrade(
    State(server): State<Server>,
    peer: ConnectInfo<std::net::SocketAddr>,
    request: Request,
) -> Response {
    let hub = started(&server)
        .hub
        .get_or_init(|| Server::builder().build())
        .clone();
    crate::upgrade::handle(State(hub), peer, request).await
}

/// Every counter a sample takes the rate of.
#[derive(Default, Clone, Copy)]
struct Totals {
    deliveries: u64,
    publications: u64,
    refusals: u64,
}

fn totals(shared: &Shared) -> Totals {
    let m = &shared.metrics;
    Totals {
        deliveries: m.deliveries(),
        publications: m.publications(),
        refusals: m.connection_refusals() + m.admission_refusals() + m.subscribe_refusals(),
    }
}

/// Take a sample every [`EVERY`] until the server is gone (the hub's
/// connections closed then, and once the server has drained).
async fn sample(shared: Weak<Shared>) {
    let mut ticks = tokio::time::interval(EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last: Option<Totals> = None;
    let mut hub: Option<Server> = None;
    loop {
        ticks.tick().await;
        let Some(shared) = shared.upgrade() else {
            if let Some(hub) = hub {
                hub.end_drain();
            }
            return;
        };
        let now = totals(&shared);
        let before = last.unwrap_or(now);
        last = Some(now);
        let lifecycle = *shared.lifecycle.borrow();
        let sample = Sample {
            at_ms: shared.clock.now().as_millis(),
            connections: shared.metrics.open_connections(),
            deliveries_per_s: now.deliveries.saturating_sub(before.deliveries),
            publications_per_s: now.publications.saturating_sub(before.publications),
            refusals_per_s: now.refusals.saturating_sub(before.refusals),
            ready: u8::from(lifecycle == Lifecycle::Serving),
        };
        if let Some(live) = shared.admin.live.get() {
            live.keep(sample);
            if hub.is_none() {
                hub = live.hub.get().cloned();
            }
        }
        drop(shared);
        if let Some(hub) = &hub {
            // With no console subscribed, the hub keeps it in its short
            // history.
            let _ = hub.publish(CHANNEL, json!(sample)).await;
            if lifecycle == Lifecycle::Drained {
                hub.end_drain();
                return;
            }
        }
    }
}
