//! What the server writes to its log: one function per line, so the names
//! of the fields stay the same wherever a line is written (docs/OPERATIONS.md
//! shows each with an example). Each line's message is the event's name.
//!
//! Lines about one connection go to the target `belay::connection` at
//! `debug`: a busy node at `info` writes none of them. Server-wide lines
//! (the drain) go to `belay::server` at `info`. What `belay serve` adds
//! (the periodic summary, signals) is in belay-cli.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use belay_proto::message::Codec;

/// Where per-connection lines go.
pub(crate) const CONNECTION: &str = "belay::connection";

/// Whether per-connection lines are written: work done only for them (a
/// lock to learn a connection's age) is skipped when they are not.
pub(crate) fn connection_lines() -> bool {
    tracing::enabled!(target: CONNECTION, tracing::Level::DEBUG)
}

/// A connection was accepted (upgraded, or an SSE stream opened): from
/// `peer`, counted against `source` (the client's address behind a
/// trusted proxy; `None`: not counted), on this `node` of a cluster.
pub(crate) fn accepted(
    peer: SocketAddr,
    source: Option<IpAddr>,
    transport: &str,
    node: Option<&str>,
) {
    tracing::debug!(
        target: CONNECTION,
        peer = %peer,
        source = source.map(|ip| ip.to_string()),
        transport,
        node,
        "accepted"
    );
}

/// A connection attempt was refused before any session: HTTP `status`
/// (an upgrade or an SSE open), or a close `code` after the upgrade.
pub(crate) fn refused(
    peer: SocketAddr,
    transport: &str,
    status: Option<u16>,
    code: Option<u16>,
    reason: &str,
) {
    tracing::debug!(
        target: CONNECTION,
        peer = %peer,
        transport,
        status,
        code,
        reason,
        "refused"
    );
}

/// The server accepted a session's credentials and sent `welcome`.
pub(crate) fn welcomed(peer: SocketAddr, user: &str, session: &str, transport: &str, codec: Codec) {
    tracing::debug!(
        target: CONNECTION,
        peer = %peer,
        user,
        session,
        transport,
        codec = codec.name(),
        "welcomed"
    );
}

/// Who ended a connection.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ClosedBy {
    /// The server closed it (a refusal, a limit, a drain, a reaped peer).
    Server,
    /// The client sent a close.
    Client,
    /// The socket failed or vanished without a close.
    Network,
}

impl ClosedBy {
    fn name(self) -> &'static str {
        match self {
            ClosedBy::Server => "server",
            ClosedBy::Client => "client",
            ClosedBy::Network => "network",
        }
    }
}

/// What a closed connection was.
#[derive(Debug)]
pub(crate) struct Closed<'a> {
    pub(crate) peer: SocketAddr,
    /// Empty before the credentials were accepted.
    pub(crate) user: &'a str,
    /// Empty before `welcome`.
    pub(crate) session: &'a str,
    pub(crate) transport: &'a str,
    pub(crate) code: u16,
    pub(crate) reason: &'a str,
    pub(crate) by: ClosedBy,
    /// From the accept to the end.
    pub(crate) duration: Option<Duration>,
}

/// A connection ended.
pub(crate) fn closed(closed: &Closed<'_>) {
    tracing::debug!(
        target: CONNECTION,
        peer = %closed.peer,
        user = closed.user,
        session = closed.session,
        transport = closed.transport,
        code = closed.code,
        reason = closed.reason,
        by = closed.by.name(),
        duration_ms = closed.duration.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        "closed"
    );
}

/// A connection went past one of its limits (`limit`: the violation's
/// name, as in `belay_protocol_violations_total`).
pub(crate) fn limit_hit(peer: SocketAddr, limit: &str) {
    tracing::debug!(target: CONNECTION, peer = %peer, limit, "limit");
}

/// The server's lifecycle changed (a drain started, or finished).
pub(crate) fn lifecycle(state: &str, connections: i64) {
    tracing::info!(target: "belay::server", state, connections, "lifecycle");
}
