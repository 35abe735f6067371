//! What the proxy has done: plain atomic counters and a serialisable snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use crate::fault::Direction;

/// Live counters of one proxy (shared by its connection tasks).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    accepted: AtomicU64,
    open: AtomicU64,
    upstream_failures: AtomicU64,
    client_to_server: AtomicU64,
    server_to_client: AtomicU64,
    dropped_client_to_server: AtomicU64,
    dropped_server_to_client: AtomicU64,
    faults_set: AtomicU64,
    resets: AtomicU64,
    refused: AtomicU64,
    dropped_new: AtomicU64,
    rate_limited: AtomicU64,
    upgrades_refused: AtomicU64,
    closed_by_toxic: AtomicU64,
}

/// A copy of the counters at one moment (the body of `GET /counters`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct CountersSnapshot {
    /// Client connections accepted (including those refused or dropped).
    pub accepted: u64,
    /// Connection pairs open right now.
    pub open: u64,
    /// Client connections closed because the upstream could not be reached.
    pub upstream_failures: u64,
    /// Bytes forwarded from clients to the upstream.
    pub client_to_server: u64,
    /// Bytes forwarded from the upstream to clients.
    pub server_to_client: u64,
    /// Client bytes discarded by [`Fault::HalfOpen`](crate::Fault::HalfOpen) or a `discard` toxic.
    pub dropped_client_to_server: u64,
    /// Upstream bytes discarded by [`Fault::HalfOpen`](crate::Fault::HalfOpen) or a `discard` toxic.
    pub dropped_server_to_client: u64,
    /// Faults switched in with [`Proxy::set`](crate::Proxy::set) or `POST /faults`.
    pub faults_set: u64,
    /// Connection pairs closed with an RST by [`Fault::Reset`](crate::Fault::Reset)
    /// or a `reset_peer` toxic.
    pub resets: u64,
    /// New connections reset during a [`Fault::Reset`](crate::Fault::Reset)
    /// refusal window or by a `refuse` toxic (`with: reset`).
    pub refused: u64,
    /// New connections closed at once by [`Fault::DropNew`](crate::Fault::DropNew)
    /// or a `refuse` toxic (`with: close`).
    pub dropped_new: u64,
    /// New connections reset by an `accept_rate` toxic.
    pub rate_limited: u64,
    /// Upgrade requests answered `403` by a `refuse_upgrades` toxic.
    pub upgrades_refused: u64,
    /// Connection pairs closed by a `timeout` or `limit_data` toxic.
    pub closed_by_toxic: u64,
}

fn add(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn accepted(&self) {
        add(&self.accepted, 1);
    }
    pub(crate) fn opened(&self) {
        add(&self.open, 1);
    }
    pub(crate) fn closed(&self) {
        self.open.fetch_sub(1, Ordering::Relaxed);
    }
    pub(crate) fn upstream_failure(&self) {
        add(&self.upstream_failures, 1);
    }
    pub(crate) fn fault_set(&self) {
        add(&self.faults_set, 1);
    }
    pub(crate) fn reset(&self) {
        add(&self.resets, 1);
    }
    pub(crate) fn refused(&self) {
        add(&self.refused, 1);
    }
    pub(crate) fn dropped_new(&self) {
        add(&self.dropped_new, 1);
    }
    pub(crate) fn rate_limited(&self) {
        add(&self.rate_limited, 1);
    }
    pub(crate) fn upgrade_refused(&self) {
        add(&self.upgrades_refused, 1);
    }
    pub(crate) fn closed_by_toxic(&self) {
        add(&self.closed_by_toxic, 1);
    }

    /// Count `n` bytes forwarded `direction`.
    pub(crate) fn forwarded(&self, direction: Direction, n: usize) {
        let counter = match direction {
            Direction::ClientToServer => &self.client_to_server,
            Direction::ServerToClient => &self.server_to_client,
        };
        add(counter, n as u64);
    }

    /// Count `n` bytes discarded `direction`.
    pub(crate) fn dropped(&self, direction: Direction, n: usize) {
        let counter = match direction {
            Direction::ClientToServer => &self.dropped_client_to_server,
            Direction::ServerToClient => &self.dropped_server_to_client,
        };
        add(counter, n as u64);
    }

    pub(crate) fn snapshot(&self) -> CountersSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        CountersSnapshot {
            accepted: get(&self.accepted),
            open: get(&self.open),
            upstream_failures: get(&self.upstream_failures),
            client_to_server: get(&self.client_to_server),
            server_to_client: get(&self.server_to_client),
            dropped_client_to_server: get(&self.dropped_client_to_server),
            dropped_server_to_client: get(&self.dropped_server_to_client),
            faults_set: get(&self.faults_set),
            resets: get(&self.resets),
            refused: get(&self.refused),
            dropped_new: get(&self.dropped_new),
            rate_limited: get(&self.rate_limited),
            upgrades_refused: get(&self.upgrades_refused),
            closed_by_toxic: get(&self.closed_by_toxic),
        }
    }
}
