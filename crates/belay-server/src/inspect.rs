//! What the server holds, read from outside a connection (for an HTTP API
//! such as belay-standalone's): a channel's history, the channels this
//! node's subscribers are on, and this node's figures.

use std::collections::BTreeMap;

use belay_proto::server::ChannelPattern;
use serde::Serialize;

use crate::broker::{ChannelList, ChannelQuery, HistoryFuture, HistoryQuery, ListError};
use crate::mailbox::Control;
use crate::shared::{Lifecycle, Server};

/// This node's figures at one moment: gauges now, counters since start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NodeStats {
    /// `serving`, `draining` or `drained`.
    pub lifecycle: &'static str,
    /// Milliseconds since the server was built.
    pub uptime_ms: u64,
    /// Connections open now.
    pub connections: u64,
    /// Sessions accepted since start.
    pub connects: u64,
    /// Subscriptions on this node now (if the broker lists channels).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscriptions: Option<usize>,
    /// Channels with a subscriber on this node now (likewise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_channels: Option<usize>,
    /// Channels the broker holds now (with history or subscribers), if it
    /// says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<usize>,
    /// Publications accepted through this server since start.
    pub publications: u64,
    /// Resumed subscriptions replayed in full.
    pub recoveries: u64,
    /// Resumed subscriptions answered `recovered: false`.
    pub recovery_misses: u64,
    /// Subscribes refused by a limit.
    pub subscribe_refusals: u64,
    /// Upgrades refused by admission control.
    pub admission_refusals: u64,
    /// TCP connections refused at accept.
    pub connection_refusals: u64,
    /// Connections reaped for not answering.
    pub zombies_reaped: u64,
    /// Pings sent to quiet connections.
    pub pings_sent: u64,
    /// Frames rejected as malformed.
    pub bad_frames: u64,
    /// Requests settled, by outcome.
    pub requests: BTreeMap<&'static str, u64>,
    /// Connection closes, by close code.
    pub closes: BTreeMap<u16, u64>,
    /// Bad input and limits answered, by kind.
    pub violations: BTreeMap<&'static str, u64>,
}

/// Connections [`Server::sessions_of`] lists at most.
pub const MAX_LISTED_SESSIONS: usize = 1_000;

/// One connection of a user on this node, as an operator sees it
/// ([`Server::sessions_of`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UserSession {
    /// The connection's number on this node (accept order).
    pub connection: u64,
    /// Its session id, once welcomed.
    pub session: Option<String>,
    /// `websocket` or `sse`.
    pub transport: &'static str,
    /// `json` or `binary`.
    pub codec: &'static str,
    /// Milliseconds since it was accepted.
    pub connected_ms: u64,
}

impl Server {
    /// `user`'s open connections on this node, in accept order (at most
    /// [`MAX_LISTED_SESSIONS`]), with their sessions, transports and codecs:
    /// each connection is asked through its mailbox and answers from its
    /// own task (so the node keeps nothing more per connection), within a
    /// second. For an operator's lookup, not a hot path.
    pub async fn sessions_of(&self, user: &str) -> Vec<UserSession> {
        let shared = &self.shared;
        let now = shared.clock.now();
        let asked: Vec<_> = {
            let node = crate::metrics::lock(&shared.node);
            let mailboxes = crate::metrics::lock(&shared.connections);
            node.connections_of(user)
                .into_iter()
                .take(MAX_LISTED_SESSIONS)
                .filter_map(|handle| {
                    let since = node.connected_at(handle)?;
                    let (answer, answered) = tokio::sync::oneshot::channel();
                    let mailbox = mailboxes.get(&handle)?;
                    mailbox.send(Control::Describe(answer)).ok()?;
                    Some((handle, since, answered))
                })
                .collect()
        };
        let deadline = crate::clock::deadline_in(std::time::Duration::from_secs(1));
        let mut sessions = Vec::with_capacity(asked.len());
        for (handle, since, answered) in asked {
            // A connection that closed meanwhile drops its answer.
            let Ok(Ok(described)) = tokio::time::timeout_at(deadline, answered).await else {
                continue;
            };
            sessions.push(UserSession {
                connection: handle.get(),
                session: described.session.as_deref().map(str::to_owned),
                transport: described.transport,
                codec: described.codec.name(),
                connected_ms: u64::try_from(now.saturating_duration_since(since).as_millis())
                    .unwrap_or(u64::MAX),
            });
        }
        sessions
    }

    /// Read `channel`'s retained history as `query` says (see
    /// [`HistoryQuery`]), with its position now: a channel nobody
    /// published on has no publication and offset 0.
    pub fn history(&self, channel: &str, query: HistoryQuery) -> HistoryFuture {
        self.shared.broker.history(channel, query)
    }

    /// The channels this node's subscribers are on, as `query` bounds them
    /// (see [`ChannelQuery`]).
    pub fn list_channels(&self, query: &ChannelQuery) -> Result<ChannelList, ListError> {
        self.shared.broker.list_channels(query)
    }

    /// This node's figures now.
    pub fn stats(&self) -> NodeStats {
        let metrics = &self.shared.metrics;
        let lifecycle = match self.lifecycle() {
            Lifecycle::Serving => "serving",
            Lifecycle::Draining => "draining",
            _ => "drained",
        };
        let listed = self
            .list_channels(&ChannelQuery::new(ChannelPattern::new("*")).bounded(0, 0))
            .ok();
        NodeStats {
            lifecycle,
            uptime_ms: u64::try_from(self.uptime().as_millis()).unwrap_or(u64::MAX),
            connections: u64::try_from(metrics.open_connections()).unwrap_or(0),
            connects: metrics.connects(),
            subscriptions: listed.as_ref().map(|l| l.subscriptions),
            active_channels: listed.as_ref().map(|l| l.matched),
            channels: self.shared.broker.channels(),
            publications: metrics.publications(),
            recoveries: metrics.recoveries(),
            recovery_misses: metrics.recovery_misses(),
            subscribe_refusals: metrics.subscribe_refusals(),
            admission_refusals: metrics.admission_refusals(),
            connection_refusals: metrics.connection_refusals(),
            zombies_reaped: metrics.zombies_reaped(),
            pings_sent: metrics.pings_sent(),
            bad_frames: metrics.bad_frames(),
            requests: metrics.requests_by_outcome(),
            closes: metrics.closes_by_code(),
            violations: metrics.violations_by_name(),
        }
    }
}
