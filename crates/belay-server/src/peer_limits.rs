//! Counting every TCP connection against its source from the moment it is
//! accepted, not only once it is upgraded.
//!
//! The accept loop takes a [`PeerSlot`] for each connection from the
//! server's [`SourceTable`](belay_proto::server::SourceTable) (belay-proto
//! decides; this is the bookkeeping). A connection over a limit is answered
//! at once with a canned HTTP status and closed, before hyper spends
//! anything on it. The slot rides along with the connection's requests
//! (a [`SlotCell`] in their extensions); the WebSocket upgrade takes it,
//! marks it upgraded, and moves it into the session, so it is released
//! exactly when the connection ends, whichever part owns it then.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::extract::ConnectInfo;
use belay_proto::server::{SourceKey, Violation, ViolationResponse};
use tokio::sync::Notify;
use tower_service::Service;

use crate::metrics::lock;
use crate::shared::Shared;

/// One TCP connection counted against its source (`None`: a trusted proxy,
/// counted only in the global pending total). Released on drop.
pub(crate) struct PeerSlot {
    shared: Arc<Shared>,
    key: Option<SourceKey>,
    pending: bool,
}

impl std::fmt::Debug for PeerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PeerSlot")
            .field("key", &self.key)
            .field("pending", &self.pending)
            .finish()
    }
}

impl PeerSlot {
    /// Count a new connection from `ip` (not upgraded yet).
    pub(crate) fn acquire(shared: &Arc<Shared>, ip: Option<IpAddr>) -> Result<PeerSlot, Violation> {
        let key = ip.map(SourceKey::from);
        let now = shared.clock.now();
        lock(&shared.node).sources_mut().open(now, key)?;
        Ok(PeerSlot {
            shared: Arc::clone(shared),
            key,
            pending: true,
        })
    }

    /// The source this slot counts against.
    pub(crate) fn key(&self) -> Option<SourceKey> {
        self.key
    }

    /// The connection was upgraded: it no longer counts as pending.
    pub(crate) fn upgraded(&mut self) {
        if self.pending {
            self.pending = false;
            lock(&self.shared.node).sources_mut().upgraded(self.key);
        }
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let now = self.shared.clock.now();
        lock(&self.shared.node)
            .sources_mut()
            .close(now, self.key, self.pending);
    }
}

/// Where a connection's slot waits for the upgrade to take it, and how a
/// session on it asks the accept loop to drop the connection.
#[derive(Debug, Clone)]
pub(crate) struct SlotCell(Arc<Mutex<Option<PeerSlot>>>, Arc<Notify>);

impl SlotCell {
    pub(crate) fn new(slot: PeerSlot) -> Self {
        SlotCell(Arc::new(Mutex::new(Some(slot))), Arc::new(Notify::new()))
    }

    /// Take the slot (once).
    pub(crate) fn take(&self) -> Option<PeerSlot> {
        lock(&self.0).take()
    }

    /// Drop the TCP connection now, whatever hyper is doing on it (an SSE
    /// stream whose peer stopped reading: hyper would wait on its write for
    /// ever).
    pub(crate) fn abort(&self) {
        self.1.notify_one();
    }

    /// Resolves once [`abort`](Self::abort) was called.
    pub(crate) async fn aborted(&self) {
        self.1.notified().await;
    }

    /// The connection carries a session's traffic without being upgraded
    /// (the SSE fallback's sends, kept alive between them): it stops
    /// counting as pending, and still counts against its source.
    pub(crate) fn settle(&self) {
        if let Some(slot) = lock(&self.0).as_mut() {
            slot.upgraded();
        }
    }
}

/// The canned answer to a connection refused before HTTP is read.
pub(crate) fn refusal_bytes(violation: Violation) -> Vec<u8> {
    let (status, retry) = match violation.response() {
        ViolationResponse::RejectUpgrade {
            status,
            retry_after_secs,
        } => (status, retry_after_secs.unwrap_or(1)),
        _ => (503, 1),
    };
    let reason = match status {
        429 => "Too Many Requests",
        _ => "Service Unavailable",
    };
    let body = violation.name();
    format!(
        "HTTP/1.1 {status} {reason}\r\nretry-after: {retry}\r\ncontent-type: text/plain\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The router as one connection's service: every request carries the
/// connection's peer address (`ConnectInfo`) and its [`SlotCell`], and the
/// first request marks the connection as having spoken in time.
#[derive(Clone)]
pub(crate) struct ConnectionService<S> {
    pub(crate) inner: S,
    pub(crate) peer: SocketAddr,
    pub(crate) slot: SlotCell,
    pub(crate) spoke: Arc<AtomicBool>,
}

impl<S, B> Service<http::Request<B>> for ConnectionService<S>
where
    S: Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        self.spoke.store(true, Ordering::Release);
        let extensions = request.extensions_mut();
        extensions.insert(ConnectInfo(self.peer));
        extensions.insert(self.slot.clone());
        self.inner.call(request)
    }
}
