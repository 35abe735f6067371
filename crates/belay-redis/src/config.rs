//! [`RedisConfig`]: where Redis is and how long things may take.

use std::time::Duration;

use belay_proto::server::Namespaces;

/// How a [`RedisBroker`](crate::RedisBroker) reaches Redis and bounds what
/// it keeps there. `Default` plus setters. Its `Debug` never shows the
/// password of the URL (docs/SECURITY.md).
#[derive(Clone)]
#[non_exhaustive]
pub struct RedisConfig {
    /// `redis://[user[:password]@]host:port[/db]` (an ACL user and its
    /// password go in the URL; `AUTH` is sent on every connection), or
    /// `rediss://…` for TLS (the host name is checked against Redis's
    /// certificate).
    pub url: String,
    /// Find the primary through Redis Sentinel instead of at `url`'s host:
    /// `url` then gives only the scheme (`rediss://` for TLS), the ACL user
    /// and password, and the database of the primary.
    pub sentinel: Option<SentinelConfig>,
    /// The nodes of a Redis Cluster to learn its slots from (`url` is the
    /// first). Empty: not a cluster. See [`RedisConfig::cluster`].
    pub cluster_nodes: Vec<String>,
    /// Acknowledge a publication only once this many replicas have it
    /// (Redis `WAIT`), and send it live only then. `0` (the default): no
    /// wait. See [`RedisConfig::wait_replicas`].
    pub wait_replicas: usize,
    /// How long a publication waits for [`wait_replicas`](Self::wait_replicas)
    /// before it is answered `unavailable`.
    pub wait_timeout: Duration,
    /// With `rediss://`: the CA certificates (PEM) Redis's certificate must
    /// chain to. `None`: the system's trusted roots.
    pub tls_ca_pem: Option<Vec<u8>>,
    /// Prefix of every key and PUB/SUB channel, so several Belay clusters
    /// can share one Redis.
    pub prefix: String,
    /// Publications kept per channel (the publish script trims the Stream
    /// to it).
    pub history_len: usize,
    /// How long a publication stays resumable. The Stream key also expires
    /// this long after its last publication.
    pub history_age: Duration,
    /// Bytes of data one channel's Stream holds at most (counted by the
    /// publish script): the oldest entries go first; one publication
    /// larger than this alone empties the Stream (what is held must end
    /// at the top), so a resume past it is not recovered.
    pub history_max_bytes: usize,
    /// Per-namespace history bounds, capped by `history_len` and
    /// `history_age` (every node on one Redis should have the same).
    pub namespaces: Namespaces,
    /// How long a channel's epoch and top offset outlive its last
    /// publication or subscription. A position older than this resumes as
    /// a new epoch (`recovered: false`).
    pub meta_ttl: Duration,
    /// Longest wait for one Redis command (publish, history read,
    /// subscribe) before it counts as Redis being unavailable.
    pub command_timeout: Duration,
    /// How often the PUB/SUB connection is probed with `PING` when nothing
    /// arrived on it for this long (any message is proof of life); one
    /// probe unanswered within `command_timeout` replaces the connection.
    pub probe_every: Duration,
    /// Publications that may arrive for one subscription while it is still
    /// reading its history; more and the subscribe is refused
    /// (`unavailable`, so the client tries again).
    pub join_buffer: usize,
    /// Joins reading their history from Redis at once on this node; more
    /// wait their turn (buffering live publications meanwhile). Without a
    /// bound, 15,000 clients resubscribing on one node sent 15,000 history
    /// reads at once, and the heartbeats and probes behind them timed out.
    /// Default 512: at 64, 10,000 clients recovering after a node's death
    /// took 1.5× as long (the reads are pipelined on one connection, so
    /// fewer at once means fewer per round trip; docs/BENCHMARKS.md).
    pub joins_in_flight: usize,
    /// Channels this node subscribes to at most (each is one PUB/SUB
    /// subscription on Redis); a `subscribe` to one more is refused
    /// (`unsubscribed` `unavailable`, as by the memory broker).
    pub max_channels: usize,
    /// Bytes of idempotent outcomes this node keeps in Redis at most (keys,
    /// records and per-key overhead); past it, its oldest outcomes are
    /// deleted early. The cluster holds at most this much per node.
    pub outcome_max_bytes: usize,
    /// This node's id in the cluster (control messages, the registry).
    /// `None`: one made from the process id and start time.
    pub node_id: Option<String>,
    /// How long a node stays listed as alive after its last heartbeat; it
    /// beats every third of this.
    pub node_ttl: Duration,
    /// How often every channel with live members on this node is compared
    /// with its top offset in Redis, so a publication lost on PUB/SUB with
    /// none after it (no gap to show the loss) is still delivered, in
    /// order, from the history.
    pub position_check_every: Duration,
    /// How long a presence entry lives without its node refreshing it (the
    /// node refreshes every third of this); a killed node's members are
    /// gone from presence within it.
    pub presence_ttl: Duration,
    /// Bytes of presence entries this node keeps (and refreshes) in Redis.
    pub presence_max_bytes: usize,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            url: "redis://127.0.0.1:6379".into(),
            sentinel: None,
            cluster_nodes: Vec::new(),
            wait_replicas: 0,
            wait_timeout: Duration::from_millis(500),
            tls_ca_pem: None,
            prefix: "belay".into(),
            history_len: 1_000,
            history_age: Duration::from_secs(300),
            history_max_bytes: 4 << 20,
            namespaces: Namespaces::default(),
            meta_ttl: Duration::from_secs(24 * 3_600),
            command_timeout: Duration::from_secs(2),
            probe_every: Duration::from_secs(1),
            join_buffer: 1_024,
            joins_in_flight: 512,
            max_channels: 100_000,
            outcome_max_bytes: 64 << 20,
            presence_ttl: Duration::from_secs(60),
            presence_max_bytes: 16 << 20,
            node_id: None,
            node_ttl: Duration::from_secs(3),
            position_check_every: Duration::from_secs(5),
        }
    }
}

impl RedisConfig {
    /// The defaults, for Redis at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            ..RedisConfig::default()
        }
    }

    /// Find the primary through the Sentinels at `urls` (each
    /// `redis://[:password@]host:port`, or `rediss://` for TLS with
    /// [`tls_ca_pem`](Self::tls_ca_pem)), which watch it under the name
    /// `master`. The primary is asked for again before every new
    /// connection, so a failover is followed on the next reconnect.
    pub fn sentinel(
        mut self,
        master: impl Into<String>,
        urls: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.sentinel = Some(SentinelConfig {
            master: master.into(),
            urls: urls.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Run on a Redis Cluster (Redis 7 or later) whose nodes include
    /// `urls` (each `redis://[user[:password]@]host:port`, or `rediss://`
    /// with [`tls_ca_pem`](Self::tls_ca_pem); one answering node is
    /// enough, the rest of the cluster is learnt from it). Channels spread
    /// over the cluster's slots by their hash tag, live publications go
    /// over sharded PUB/SUB (`SSUBSCRIBE`), and `MOVED`, `ASK` and failovers
    /// are followed. Not with [`sentinel`](Self::sentinel).
    pub fn cluster(mut self, urls: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.cluster_nodes = urls.into_iter().map(Into::into).collect();
        if let Some(first) = self.cluster_nodes.first() {
            self.url.clone_from(first);
        }
        self
    }

    /// Whether this is a Redis Cluster ([`RedisConfig::cluster`]).
    pub fn is_cluster(&self) -> bool {
        !self.cluster_nodes.is_empty()
    }

    /// Durability: acknowledge a publication only once `replicas` replicas
    /// have it (Redis `WAIT`, at most `timeout`), and only then send it
    /// live. A failover to one of them then loses no publication a client
    /// saw or a publisher was told succeeded, so channels keep their epoch
    /// (positions resume with `recovered: true`). A publication not
    /// confirmed in time is answered `unavailable` (it may still appear, from
    /// the history). Costs a round trip to the replicas on every publish
    /// (docs/BENCHMARKS.md). Every node of a cluster should have the same.
    pub fn wait_replicas(mut self, replicas: usize, timeout: Duration) -> Self {
        self.wait_replicas = replicas;
        self.wait_timeout = timeout;
        self
    }

    /// Set [`prefix`](Self::prefix).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Set [`history_len`](Self::history_len).
    pub fn history_len(mut self, len: usize) -> Self {
        self.history_len = len;
        self
    }

    /// Set [`history_max_bytes`](Self::history_max_bytes).
    pub fn history_max_bytes(mut self, bytes: usize) -> Self {
        self.history_max_bytes = bytes;
        self
    }

    /// Set [`namespaces`](Self::namespaces).
    pub fn namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Set [`joins_in_flight`](Self::joins_in_flight) (at least 1).
    pub fn joins_in_flight(mut self, joins: usize) -> Self {
        self.joins_in_flight = joins.max(1);
        self
    }

    /// Set [`history_age`](Self::history_age).
    pub fn history_age(mut self, age: Duration) -> Self {
        self.history_age = age;
        self
    }

    /// Set [`meta_ttl`](Self::meta_ttl).
    pub fn meta_ttl(mut self, ttl: Duration) -> Self {
        self.meta_ttl = ttl;
        self
    }

    /// Set [`command_timeout`](Self::command_timeout).
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// Set [`probe_every`](Self::probe_every).
    pub fn probe_every(mut self, every: Duration) -> Self {
        self.probe_every = every;
        self
    }

    /// Set [`presence_ttl`](Self::presence_ttl).
    pub fn presence_ttl(mut self, ttl: Duration) -> Self {
        self.presence_ttl = ttl;
        self
    }

    /// Set [`presence_max_bytes`](Self::presence_max_bytes).
    pub fn presence_max_bytes(mut self, bytes: usize) -> Self {
        self.presence_max_bytes = bytes;
        self
    }

    /// Set [`outcome_max_bytes`](Self::outcome_max_bytes).
    pub fn outcome_max_bytes(mut self, bytes: usize) -> Self {
        self.outcome_max_bytes = bytes;
        self
    }

    /// Set [`node_id`](Self::node_id).
    pub fn node_id(mut self, id: impl Into<String>) -> Self {
        self.node_id = Some(id.into());
        self
    }

    /// Set [`node_ttl`](Self::node_ttl).
    pub fn node_ttl(mut self, ttl: Duration) -> Self {
        self.node_ttl = ttl;
        self
    }

    /// Set [`position_check_every`](Self::position_check_every).
    pub fn position_check_every(mut self, every: Duration) -> Self {
        self.position_check_every = every;
        self
    }

    /// Set [`tls_ca_pem`](Self::tls_ca_pem).
    pub fn tls_ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls_ca_pem = Some(pem.into());
        self
    }
}

/// Where the Sentinels are and the name they watch the primary under.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SentinelConfig {
    /// The master name of the Sentinels' configuration (`sentinel monitor
    /// NAME …`).
    pub master: String,
    /// The Sentinels, `redis://[:password@]host:port` (TLS: `rediss://`).
    /// Asked in order; the first that names a primary that says it is one
    /// wins.
    pub urls: Vec<String>,
}

impl std::fmt::Debug for SentinelConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<String> = self.urls.iter().map(|u| redacted_url(u)).collect();
        f.debug_struct("SentinelConfig")
            .field("master", &self.master)
            .field("urls", &urls)
            .finish()
    }
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redacted_url(&self.url))
            .field("sentinel", &self.sentinel)
            .field(
                "cluster_nodes",
                &self
                    .cluster_nodes
                    .iter()
                    .map(|u| redacted_url(u))
                    .collect::<Vec<_>>(),
            )
            .field("wait_replicas", &self.wait_replicas)
            .field("prefix", &self.prefix)
            .field("node_id", &self.node_id)
            .finish_non_exhaustive()
    }
}

/// `url` with the password of its user info (`redis://user:PASSWORD@host`)
/// replaced by `***`, so logs and panics never carry it.
pub(crate) fn redacted_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The user info ends at the last `@` before the path.
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let Some(at) = rest[..authority_end].rfind('@') else {
        return url.to_owned();
    };
    match rest[..at].split_once(':') {
        Some((user, _password)) => format!("{scheme}://{user}:***@{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_password() {
        let config = RedisConfig::new("redis://belay:hunter2@127.0.0.1:6379/0");
        let shown = format!("{config:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(
            shown.contains("redis://belay:***@127.0.0.1:6379/0"),
            "{shown}"
        );
        assert_eq!(
            redacted_url("rediss://:p@ss@host:1"),
            "rediss://:***@host:1"
        );
        assert_eq!(redacted_url("redis://host:1/2"), "redis://host:1/2");
        let config = config.sentinel("main", ["redis://:s3cret@127.0.0.1:26379"]);
        let shown = format!("{config:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("127.0.0.1:26379"), "{shown}");
        let config = RedisConfig::default().cluster(["redis://:cl4ster@127.0.0.1:7000"]);
        let shown = format!("{config:?}");
        assert!(!shown.contains("cl4ster"), "{shown}");
        assert!(shown.contains("127.0.0.1:7000"), "{shown}");
    }
}
