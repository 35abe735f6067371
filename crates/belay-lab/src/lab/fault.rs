//! The faults the lab measures, and what "on" and "off" mean for each.

use std::fmt;
use std::str::FromStr;

use super::cluster::RedisSetup;

/// One fault of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LabFault {
    /// The server stops reading and writing its sockets; they stay open.
    Freeze,
    /// Pings go on; subscriptions are dropped and requests go unanswered.
    ServiceDown,
    /// Every answer comes 15 s late.
    SlowReplies,
    /// Every session is dropped 300 ms after its `welcome`.
    Flapping,
    /// Every session dropped at once; upgrades refused while the fault lasts.
    Restart,
    /// The fault proxy stops forwarding, closing nothing.
    Blackhole,
    /// The server's network namespace loses its link: no FIN, no RST.
    LinkCut,
    /// The proxy forwards client→server and discards server→client.
    HalfOpen,
    /// The connection is reset; new ones are accepted by a server that
    /// never answers the handshake.
    Zombie,
    /// A graceful drain: advice, close 1012, the process exits and a new
    /// one takes its place.
    Drain,
    /// A proxy starts blocking WebSockets: every connection is reset, and
    /// upgrades are answered `403` while plain HTTP passes; then the
    /// block is lifted. Belay's clients carry on over the SSE + HTTP
    /// fallback and come back to WebSocket afterwards.
    WebsocketBlocked,
    /// Cluster: the client's node gets SIGTERM and drains; the other node
    /// on the same Redis takes its clients.
    Deploy,
    /// Cluster: the client's node gets SIGKILL.
    NodeKill,
    /// Cluster: Redis stops answering (SIGSTOP), keeping its data, then
    /// goes on (SIGCONT).
    RedisDown,
    /// Cluster: Redis killed and started again on the same port, empty.
    RedisRestart,
    /// Cluster on Redis with Sentinel: the primary killed, its replica
    /// promoted; the nodes find it through the Sentinels.
    SentinelFailover,
    /// The same with two replicas and publications acknowledged once one
    /// has them (`wait_replicas = 1`): nothing a client saw is lost, so
    /// positions resume.
    SentinelFailoverWait,
    /// On a Redis Cluster (three primaries, a replica each, the nodes
    /// with `--redis-cluster`), the primary serving the feed's slot gets
    /// SIGKILL and its replica is promoted: announced like a Sentinel
    /// failover (a resync), the connection stays up.
    ClusterPrimaryKilled,
    /// On the same cluster, the feed's slot moves to another primary
    /// (`MIGRATE`, as `redis-cli --cluster reshard` does) while the feed
    /// publishes: resumed without a resync, the connection stays up.
    Resharding,
    /// A cluster with JWT auth and a resident host: the lab's host
    /// (answering each call after a second)
    /// is on one node, the client calls it through the other; the host's
    /// node gets SIGKILL while calls are in flight. They settle
    /// `host_lost` within the bound of docs/HOSTS.md, the client's
    /// connection stays up, and the host comes back on the client's node.
    HostNodeKill,
}

impl LabFault {
    /// Every fault, in table order.
    pub const ALL: [LabFault; 20] = [
        LabFault::Freeze,
        LabFault::ServiceDown,
        LabFault::SlowReplies,
        LabFault::Flapping,
        LabFault::Restart,
        LabFault::Blackhole,
        LabFault::LinkCut,
        LabFault::HalfOpen,
        LabFault::Zombie,
        LabFault::Drain,
        LabFault::WebsocketBlocked,
        LabFault::Deploy,
        LabFault::NodeKill,
        LabFault::RedisDown,
        LabFault::RedisRestart,
        LabFault::SentinelFailover,
        LabFault::SentinelFailoverWait,
        LabFault::ClusterPrimaryKilled,
        LabFault::Resharding,
        LabFault::HostNodeKill,
    ];

    /// The name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            LabFault::Freeze => "freeze",
            LabFault::ServiceDown => "service-down",
            LabFault::SlowReplies => "slow-replies",
            LabFault::Flapping => "flapping",
            LabFault::Restart => "restart",
            LabFault::Blackhole => "blackhole",
            LabFault::LinkCut => "link-cut",
            LabFault::HalfOpen => "half-open",
            LabFault::Zombie => "zombie",
            LabFault::Drain => "drain",
            LabFault::WebsocketBlocked => "websocket-blocked",
            LabFault::Deploy => "deploy",
            LabFault::NodeKill => "node-kill",
            LabFault::RedisDown => "redis-down",
            LabFault::RedisRestart => "redis-restart",
            LabFault::SentinelFailover => "sentinel-failover",
            LabFault::SentinelFailoverWait => "sentinel-failover-wait",
            LabFault::ClusterPrimaryKilled => "cluster-primary-killed",
            LabFault::Resharding => "resharding",
            LabFault::HostNodeKill => "host-node-kill",
        }
    }

    /// Whether only the heartbeat can reveal it (no socket event ever
    /// comes), so detection is held to the heartbeat bound.
    pub fn silent(self) -> bool {
        matches!(
            self,
            LabFault::Freeze | LabFault::Blackhole | LabFault::LinkCut | LabFault::HalfOpen
        )
    }

    /// Whether the client should notice it at all (slow replies only cost
    /// request deadlines; a host's node killed only costs the calls to
    /// the host, which settle `host_lost`).
    pub fn detectable(self) -> bool {
        !matches!(self, LabFault::SlowReplies | LabFault::HostNodeKill)
    }

    /// Whether a resident host runs: the nodes check JWTs, the client
    /// carries a token and calls the host (`$call`) instead of `echo`.
    /// Belay's clients only (the naive ones and the peers have neither
    /// tokens nor `$call`).
    pub fn hosted(self) -> bool {
        self == LabFault::HostNodeKill
    }

    /// The server side's connections once the fault is over: the client,
    /// and the host where one runs.
    pub fn connections_after(self) -> u64 {
        if self.hosted() {
            2
        } else {
            1
        }
    }

    /// Whether it runs against a cluster (two nodes on one Redis behind
    /// HAProxy) instead of one server.
    pub fn cluster(self) -> bool {
        matches!(
            self,
            LabFault::Deploy
                | LabFault::NodeKill
                | LabFault::RedisDown
                | LabFault::RedisRestart
                | LabFault::SentinelFailover
                | LabFault::SentinelFailoverWait
                | LabFault::ClusterPrimaryKilled
                | LabFault::Resharding
                | LabFault::HostNodeKill
        )
    }

    /// The Redis its cluster runs on.
    pub(crate) fn redis_setup(self) -> RedisSetup {
        match self {
            LabFault::SentinelFailover => RedisSetup::Sentinel,
            LabFault::SentinelFailoverWait => RedisSetup::SentinelWait,
            LabFault::ClusterPrimaryKilled | LabFault::Resharding => RedisSetup::Cluster,
            _ => RedisSetup::Single,
        }
    }

    /// Whether the clients go through the fault proxy.
    pub(crate) fn proxied(self) -> bool {
        self != LabFault::LinkCut && !self.cluster()
    }
}

impl fmt::Display for LabFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LabFault {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        LabFault::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = LabFault::ALL.iter().map(|f| f.name()).collect();
                format!("unknown fault {s:?} (one of {})", names.join(", "))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for fault in LabFault::ALL {
            assert_eq!(fault.name().parse::<LabFault>(), Ok(fault));
        }
        assert!("nope".parse::<LabFault>().is_err());
    }
}
