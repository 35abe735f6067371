//! The checks every new session passes after its transport's own: origin,
//! draining, the source's connections, the accept rate. The decisions are
//! the core's ([`UpgradeDecision`]); this file counts the source and takes
//! the admission token between its steps.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::header;

use belay_proto::message::Codec;
use belay_proto::server::{UpgradeDecision, UpgradeVerdict, Violation};

use crate::connection::{Admission, ConnectionMeta};
use crate::metrics::{lock, Metrics};
use crate::peer_limits::{PeerSlot, SlotCell};
use crate::shared::{Lifecycle, Shared};

/// A session the checks let in: how it was admitted, its source's slot
/// (still pending until [`Admitted::upgraded`]) and the
/// `Authorization: Bearer` token, if any.
pub(crate) struct Admitted {
    pub(crate) admission: Admission,
    slot: PeerSlot,
    token: Option<String>,
}

impl Admitted {
    /// The session exists (upgraded, or its stream's first body read): its
    /// connection no longer counts as pending.
    pub(crate) fn upgraded(&mut self) {
        self.slot.upgraded();
    }

    /// What the connection's driver is given.
    pub(crate) fn into_meta(self, peer: SocketAddr, codec: Codec) -> ConnectionMeta {
        ConnectionMeta {
            peer,
            header_token: self.token,
            admission: self.admission,
            codec,
            _peer_slot: Some(self.slot),
        }
    }
}

/// The checks every new session passes, whatever its transport (this
/// WebSocket upgrade, or `POST /sse`): origin, draining, the source's
/// connections, the accept rate (spec/PROTOCOL.md §2.7). The decisions
/// are the core's (`UpgradeDecision`); counting the source and taking an
/// admission token happen here, between its steps.
pub(crate) fn admit(
    shared: &Arc<Shared>,
    request: &Request,
    peer: SocketAddr,
) -> Result<Admitted, UpgradeVerdict> {
    let headers = request.headers();
    let limits = &shared.config.limits;
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let draining = *shared.lifecycle.borrow() != Lifecycle::Serving;
    let decision = UpgradeDecision::new(limits, origin, draining)?;
    let (decision, slot) = decision.source_counted(source_slot(shared, request, peer))?;
    let now = shared.clock.now();
    let source_share = match slot.key() {
        Some(key) => lock(&shared.node).sources_mut().admit(now, key),
        None => Ok(()),
    };
    let admitted = source_share.and_then(|()| lock(&shared.node).admission_mut().try_take(now));
    if let Err(wait) = admitted {
        Metrics::add(&shared.metrics.admission_refusals);
        shared.emit("admission_refused", format!("{peer}: retry after {wait:?}"));
    }
    let admission = match decision.admitted(admitted) {
        UpgradeVerdict::Upgrade => Admission::Admitted,
        UpgradeVerdict::UpgradeThenRefuse { retry_after } => Admission::Refused { retry_after },
        refused => return Err(refused),
    };
    Ok(Admitted {
        admission,
        slot,
        token: crate::auth::bearer(headers),
    })
}

/// The slot counting this connection against its source: the one the
/// accept loop took, unless a trusted proxy names the client in
/// `X-Forwarded-For`/`Forwarded` (then the client is counted instead of
/// the proxy); taken here when the router is served some other way.
fn source_slot(
    shared: &Arc<Shared>,
    request: &Request,
    peer: SocketAddr,
) -> Result<PeerSlot, Violation> {
    let from_accept = request
        .extensions()
        .get::<SlotCell>()
        .and_then(SlotCell::take);
    let proxies = &shared.config.trusted_proxies;
    let forwarded_by_proxy = !proxies.is_empty() && proxies.trusts(peer.ip());
    if !forwarded_by_proxy {
        if let Some(slot) = from_accept {
            return Ok(slot);
        }
        return PeerSlot::acquire(shared, Some(peer.ip()));
    }
    let values = |name: header::HeaderName| -> Vec<&str> {
        request
            .headers()
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect()
    };
    let client = proxies.client(
        peer.ip(),
        &values(header::HeaderName::from_static("x-forwarded-for")),
        &values(header::FORWARDED),
    );
    let counted = (!proxies.trusts(client)).then_some(client);
    let slot = PeerSlot::acquire(shared, counted)?;
    // The proxy's own connection is now this client's: stop counting it
    // as not yet upgraded.
    drop(from_accept);
    Ok(slot)
}
