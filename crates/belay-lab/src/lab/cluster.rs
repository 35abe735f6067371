//! The cluster the cluster faults run against: one `redis-server` without
//! persistence (for the Sentinel faults: a primary with one or two
//! replicas and three Sentinels, `sentinels.rs`; for the Redis Cluster
//! faults: three primaries with a replica each, made by `redis-cli
//! --cluster create`), two `belay serve --demo --broker redis://…` nodes on it,
//! and HAProxy in front (health checks on `/readyz`, the client's address
//! sent with `send-proxy-v2`), as in the cluster tests
//! (crates/belay-cli/tests/cluster). Each process runs on free loopback
//! ports, with what it writes in a temporary directory of the cluster's
//! own; everything is stopped when the cluster is dropped. Every wait is
//! bounded. For the hosted fault (`host-node-kill`) the nodes run from a
//! config file with JWT auth, HAProxy has a front pinned to each node, and
//! a resident host runs on node 1 (`hosted.rs`).
//!
//! ```text
//!   agent ──▶ HAProxy ──send-proxy-v2──▶ node A ──┐
//!                     └──send-proxy-v2──▶ node B ──┴──▶ redis-server
//! ```
//!
//! redis-server and haproxy come from `PATH` (Debian's packages; the test
//! command installs them).

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use belay_client::host::Host;
use belay_test_support::services::RedisCluster;
use tokio::process::Command;

use super::haproxy::Haproxy;
use super::hosted;
use super::redis::Redis;
use super::sentinels::{self, Sentinels};
use super::server::{LabServer, NodeSetup, ServerSetup};

/// How long redis-server and HAProxy may take to be up.
pub(crate) const START_BOUND: Duration = Duration::from_secs(10);
/// Free ports are picked, then bound by another process: another process
/// may take one in between, so starting is tried this many times.
pub(crate) const PORT_TRIES: usize = 3;
/// Seconds a draining node waits for HAProxy to notice `/readyz` = 503
/// before it advises its clients to leave: its checks (every 100 ms, two
/// failures) take 200 ms; a second is plenty.
pub(crate) const LB_DELAY_SECS: u64 = 1;

/// `kill -SIGNAL pid` (`TERM`, `KILL`, `STOP`, `CONT`).
pub(crate) async fn signal(pid: u32, signal: &str) -> Result<(), String> {
    let out = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .output()
        .await
        .map_err(|e| format!("cannot run kill: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "kill -{signal} {pid}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A loopback port nothing listens on now (the OS picks it).
pub(crate) fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free loopback port: {e}"))
}

/// A directory of the cluster's own, removed on drop.
#[derive(Debug)]
struct TempDir(PathBuf);

impl TempDir {
    fn create() -> Result<TempDir, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("belay-lab-cluster-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(TempDir(path))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Redis, the nodes on it, and HAProxy in front.
#[derive(Debug)]
pub(crate) struct Cluster {
    // Dropped in this order: the host, the nodes, HAProxy, Redis, the
    // directory.
    /// The hosted fault's resident host, on node [`HOST_NODE`].
    host: Option<Host>,
    /// The hosted fault's caller token (the nodes check JWTs).
    caller_token: Option<String>,
    nodes: Vec<Option<LabServer>>,
    haproxy: Haproxy,
    /// The one Redis, or the Sentinels' first primary (none on a Redis
    /// Cluster).
    redis: Option<Redis>,
    /// On a Redis Cluster: its nodes.
    redis_cluster: Option<RedisCluster>,
    /// With Sentinel: the replicas and the Sentinels watching them all.
    sentinels: Option<(Vec<Redis>, Sentinels)>,
    _dir: TempDir,
}

/// Nodes in a cluster.
const NODES: usize = 2;
/// With a resident host: the node the client is sent to (its pinned front),
/// and the host's.
const CLIENT_NODE: usize = 0;
pub(crate) const HOST_NODE: usize = 1;

/// The Redis a cluster runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedisSetup {
    /// One `redis-server`.
    Single,
    /// A primary, one replica and three Sentinels.
    Sentinel,
    /// A primary, two replicas and three Sentinels; the nodes acknowledge
    /// a publication once one replica has it (`--redis-wait-replicas 1`),
    /// so after a failover the other replica confirms.
    SentinelWait,
    /// A Redis Cluster: three primaries with a replica each.
    Cluster,
}

/// A key of the channel the lab's clients follow (`feed`): its slot is the
/// channel's, which the Redis Cluster faults act on.
const FEED_KEY: &str = "belay.meta.{feed}";

impl Cluster {
    /// Start Redis as `redis` says, [`NODES`] nodes on it (with `setup`'s
    /// timings), and HAProxy; returns once HAProxy routes. `hosted`: the
    /// nodes check JWTs, HAProxy has a front pinned to each node, and a
    /// resident host runs on node [`HOST_NODE`] (one Redis only).
    pub(crate) async fn start(
        setup: &ServerSetup,
        redis: RedisSetup,
        hosted: bool,
    ) -> Result<Cluster, String> {
        let dir = TempDir::create()?;
        if redis == RedisSetup::Cluster {
            return Cluster::start_on_redis_cluster(setup, dir).await;
        }
        let primary = Redis::start(&dir.0).await?;
        let (replicas, wait_replicas) = match redis {
            RedisSetup::Sentinel => (1, 0),
            RedisSetup::SentinelWait => (2, 1),
            _ => (0, 0),
        };
        let sentinels = if replicas > 0 {
            let mut started = Vec::new();
            for _ in 0..replicas {
                started.push(Redis::start_replica_of(&dir.0, primary.port()).await?);
            }
            let watching = Sentinels::start(&dir.0, primary.port(), replicas).await?;
            Some((started, watching))
        } else {
            None
        };
        let mut node = NodeSetup {
            broker: match &sentinels {
                // Only the scheme counts: the Sentinels name the primary.
                Some(_) => "redis://sentinel-named-primary".into(),
                None => primary.url(),
            },
            sentinel: sentinels
                .as_ref()
                .map(|(_, s)| (sentinels::MASTER.to_owned(), s.urls())),
            wait_replicas,
            cluster: None,
            lb_delay_secs: LB_DELAY_SECS,
            config: None,
        };
        if hosted {
            let file = dir.0.join("node.toml");
            std::fs::write(&file, hosted::node_config(setup, &node, &hosted::secret()))
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            node.config = Some(file);
        }
        let mut cluster = Cluster::start_nodes(setup, &node, dir, hosted).await?;
        cluster.redis = Some(primary);
        cluster.sentinels = sentinels;
        if let Some(file) = &node.config {
            cluster.start_host(setup, file).await?;
        }
        Ok(cluster)
    }

    /// Mint the tokens against the nodes' `config`, and start the host on
    /// node [`HOST_NODE`]'s pinned front.
    async fn start_host(&mut self, setup: &ServerSetup, config: &Path) -> Result<(), String> {
        let host_token = hosted::mint(&setup.exe, config, hosted::HOST_ID, true).await?;
        let caller_token = hosted::mint(&setup.exe, config, "lab-caller", false).await?;
        let front = self
            .haproxy
            .pinned
            .get(HOST_NODE)
            .ok_or("HAProxy has no front pinned to the host's node")?;
        self.host = Some(hosted::start_host(format!("ws://{front}/ws"), host_token));
        self.caller_token = Some(caller_token);
        Ok(())
    }

    /// The caller's token, where the nodes check JWTs.
    pub(crate) fn caller_token(&self) -> Option<&str> {
        self.caller_token.as_deref()
    }

    /// [`NODES`] nodes on a Redis Cluster, and HAProxy.
    async fn start_on_redis_cluster(setup: &ServerSetup, dir: TempDir) -> Result<Cluster, String> {
        let redis = RedisCluster::start(3, 1).await;
        let urls = redis.urls();
        let node = NodeSetup {
            broker: urls[0].clone(),
            sentinel: None,
            wait_replicas: 0,
            cluster: Some(urls[1..].to_vec()),
            lb_delay_secs: LB_DELAY_SECS,
            config: None,
        };
        let mut cluster = Cluster::start_nodes(setup, &node, dir, false).await?;
        cluster.redis_cluster = Some(redis);
        Ok(cluster)
    }

    /// [`NODES`] nodes as `node` says, and HAProxy in front (with a front
    /// pinned to each node if `pinned`).
    async fn start_nodes(
        setup: &ServerSetup,
        node: &NodeSetup,
        dir: TempDir,
        pinned: bool,
    ) -> Result<Cluster, String> {
        let mut nodes = Vec::new();
        for _ in 0..NODES {
            nodes.push(LabServer::start_node(setup, node).await?);
        }
        let addrs: Vec<SocketAddr> = nodes.iter().map(LabServer::addr).collect();
        let haproxy = Haproxy::start(&dir.0, &addrs, pinned).await?;
        Ok(Cluster {
            host: None,
            caller_token: None,
            nodes: nodes.into_iter().map(Some).collect(),
            haproxy,
            redis: None,
            redis_cluster: None,
            sentinels: None,
            _dir: dir,
        })
    }

    /// On a Redis Cluster: kill the primary serving the feed's slot and
    /// wait until its replica serves it.
    pub(crate) async fn kill_feed_primary(&mut self) -> Result<(), String> {
        let redis = self
            .redis_cluster
            .as_mut()
            .ok_or("this cluster is not on a Redis Cluster")?;
        let primary = redis.primary_of(redis.slot_of(FEED_KEY).await).await;
        redis.kill_primary(primary).await;
        Ok(())
    }

    /// On a Redis Cluster: move the feed's slot to the next primary.
    pub(crate) async fn move_feed_slot(&mut self) -> Result<(), String> {
        let redis = self
            .redis_cluster
            .as_ref()
            .ok_or("this cluster is not on a Redis Cluster")?;
        let slot = redis.slot_of(FEED_KEY).await;
        let from = redis.primary_of(slot).await;
        redis.move_slot(slot, (from + 1) % redis.shards()).await;
        Ok(())
    }

    /// Kill the primary and wait (at most `bound`) until the Sentinels
    /// have promoted a replica.
    pub(crate) async fn fail_over(&mut self, bound: Duration) -> Result<(), String> {
        let (_, sentinels) = self
            .sentinels
            .as_ref()
            .ok_or("this cluster has no Sentinels")?;
        self.redis
            .as_mut()
            .ok_or("this cluster has no primary of its own")?
            .kill()
            .await;
        sentinels.switched(bound).await
    }

    /// Where clients connect: HAProxy (with a resident host: its front
    /// pinned to node [`CLIENT_NODE`]).
    pub(crate) fn front(&self) -> SocketAddr {
        self.haproxy
            .pinned
            .get(CLIENT_NODE)
            .copied()
            .unwrap_or(self.haproxy.front)
    }

    /// The shared Redis (not on a Redis Cluster).
    pub(crate) fn redis(&mut self) -> Result<&mut Redis, String> {
        self.redis
            .as_mut()
            .ok_or_else(|| "this cluster runs on a Redis Cluster".to_owned())
    }

    /// The node holding a connection (the lab's one client is on it).
    pub(crate) async fn client_node(&self) -> Result<usize, String> {
        for (i, node) in self.running() {
            if node.metric("belay_connections_open").await? >= 1.0 {
                return Ok(i);
            }
        }
        Err("no node holds the client's connection".into())
    }

    /// Check the hosted fault's placement: one connection on each node,
    /// the client's on [`CLIENT_NODE`] and the host's on [`HOST_NODE`]
    /// (their pinned fronts put them there).
    pub(crate) async fn host_placed(&self) -> Result<(), String> {
        let mut open = Vec::new();
        for (_, node) in self.running() {
            open.push(node.metric("belay_connections_open").await?);
        }
        if open == [1.0, 1.0] {
            Ok(())
        } else {
            Err(format!(
                "the client and the host are not one on each node: {open:?} connections"
            ))
        }
    }

    /// The open connections of every node still running.
    pub(crate) async fn connections_open(&self) -> Result<u64, String> {
        let mut sum = 0;
        for (_, node) in self.running() {
            sum += node.metric("belay_connections_open").await? as u64;
        }
        Ok(sum)
    }

    /// Send node `index` `signal` and wait (at most `bound`) until it has
    /// exited; it is gone from the cluster afterwards.
    pub(crate) async fn stop_node(
        &mut self,
        index: usize,
        signal: &str,
        bound: Duration,
    ) -> Result<(), String> {
        let node = self
            .nodes
            .get_mut(index)
            .and_then(Option::as_mut)
            .ok_or_else(|| format!("node {index} is not running"))?;
        node.signal(signal).await?;
        if !node.exited(bound).await {
            return Err(format!(
                "node {index} did not exit within {bound:?} of SIG{signal}"
            ));
        }
        self.nodes[index] = None;
        Ok(())
    }

    /// Wait (at most `bound`) until HAProxy has taken node `index` out of
    /// rotation (its health checks failed twice).
    pub(crate) async fn out_of_rotation(
        &self,
        index: usize,
        bound: Duration,
    ) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let state = self.haproxy.state(index).await?;
            if state == "DOWN" {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "haproxy still has node {index} {state} {bound:?} after it stopped"
                ));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    fn running(&self) -> impl Iterator<Item = (usize, &LabServer)> {
        self.nodes
            .iter()
            .enumerate()
            .filter_map(|(i, n)| n.as_ref().map(|n| (i, n)))
    }
}
