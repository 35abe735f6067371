//! [`RedisCluster`]: a Redis Cluster of primaries, each with replicas, made
//! with `redis-cli --cluster create` as a team makes one, on loopback
//! ports; and the operator's moves on it (resharding a slot, losing a
//! primary), done with `redis-cli`.

use std::time::Duration;

use tokio::process::Command;

use super::{free_port, RedisServer};

/// How long a silent node is given before the others call it failed:
/// short, so a failover takes a few seconds in a test.
const NODE_TIMEOUT_MS: u64 = 1_000;

/// The primaries and replicas of one Redis Cluster. Stopped when dropped.
#[derive(Debug)]
pub struct RedisCluster {
    /// Every node, the first `primaries` started as primaries.
    pub nodes: Vec<RedisServer>,
    /// Each node's cluster bus port.
    buses: Vec<u16>,
    primaries: usize,
}

impl RedisCluster {
    /// `primaries` shards of `replicas` replicas each; returns once every
    /// node agrees that all 16,384 slots are served.
    pub async fn start(primaries: usize, replicas: usize) -> RedisCluster {
        assert!(primaries >= 1, "a cluster has a primary");
        let mut nodes = Vec::new();
        let mut buses = Vec::new();
        for _ in 0..primaries * (1 + replicas) {
            buses.push(free_port());
            let bus = buses[buses.len() - 1].to_string();
            nodes.push(
                RedisServer::start_with_args(
                    [
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        &NODE_TIMEOUT_MS.to_string(),
                        "--cluster-port",
                        &bus,
                        // A replica promotes itself however long it was cut off.
                        "--cluster-replica-validity-factor",
                        "0",
                    ]
                    .map(str::to_owned)
                    .to_vec(),
                )
                .await,
            );
        }
        let cluster = RedisCluster {
            nodes,
            buses,
            primaries,
        };
        if primaries >= 3 {
            let mut create: Vec<String> = vec!["--cluster".into(), "create".into()];
            create.extend(cluster.nodes.iter().map(|n| n.addr().to_string()));
            create.extend([
                "--cluster-replicas".into(),
                replicas.to_string(),
                "--cluster-yes".into(),
            ]);
            let made = redis_cli(&create).await;
            assert!(
                made.contains("All 16384 slots covered"),
                "redis-cli --cluster create failed: {made}"
            );
        } else {
            // `redis-cli --cluster create` wants three primaries at least;
            // fewer (a one-shard baseline) is made by hand, the same way.
            cluster.assemble(replicas).await;
        }
        cluster.wait_until_served(Duration::from_secs(30)).await;
        cluster
    }

    /// Give each primary its share of the slots, introduce every node to
    /// the first, and make the rest replicas of their primaries.
    async fn assemble(&self, replicas: usize) {
        let share = 16_384 / self.primaries;
        for primary in 0..self.primaries {
            let low = (primary * share).to_string();
            let high = if primary + 1 == self.primaries {
                16_383
            } else {
                (primary + 1) * share - 1
            }
            .to_string();
            let added = self
                .cli(primary, &["CLUSTER", "ADDSLOTSRANGE", &low, &high])
                .await;
            assert!(added.contains("OK"), "ADDSLOTSRANGE: {added}");
        }
        let first = self.nodes[0].addr();
        let (host, port) = (first.ip().to_string(), first.port().to_string());
        // The bus port is named: it is not the default (port + 10,000).
        let bus = self.buses[0].to_string();
        for node in 1..self.nodes.len() {
            self.cli(node, &["CLUSTER", "MEET", &host, &port, &bus])
                .await;
        }
        for replica in 0..self.primaries * replicas {
            let node = self.primaries + replica;
            let primary_id = self.node_id(replica % self.primaries).await;
            // A replica may be told before it has heard of its primary.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
            loop {
                let done = self.cli(node, &["CLUSTER", "REPLICATE", &primary_id]).await;
                if done.contains("OK") {
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "CLUSTER REPLICATE: {done}"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    /// Every node's URL (a broker needs one that answers).
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    /// How many shards it has.
    pub fn shards(&self) -> usize {
        self.primaries
    }

    /// Run `redis-cli` against node `index` with `args`; its output.
    pub async fn cli(&self, index: usize, args: &[&str]) -> String {
        let mut all: Vec<String> = vec!["-p".into(), self.nodes[index].addr().port().to_string()];
        all.extend(args.iter().map(|a| (*a).to_owned()));
        redis_cli(&all).await
    }

    /// The slot `key` hashes to.
    pub async fn slot_of(&self, key: &str) -> u16 {
        let answer = self
            .cli(self.any_alive(), &["CLUSTER", "KEYSLOT", key])
            .await;
        answer
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("CLUSTER KEYSLOT {key}: {answer}"))
    }

    /// The index of the node serving `slot` as primary now.
    pub async fn primary_of(&self, slot: u16) -> usize {
        let nodes = self.cli(self.any_alive(), &["CLUSTER", "NODES"]).await;
        self.serving(&nodes, slot)
            .unwrap_or_else(|| panic!("no primary serves slot {slot}: {nodes}"))
    }

    /// Who serves `slot` in a `CLUSTER NODES` answer (a primary not
    /// flagged failing).
    fn serving(&self, nodes: &str, slot: u16) -> Option<usize> {
        nodes.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 9 || !fields[2].contains("master") || fields[2].contains("fail") {
                return None;
            }
            let serves = fields[8..].iter().any(|range| {
                let (low, high) = range.split_once('-').unwrap_or((range, range));
                match (low.parse::<u16>(), high.parse::<u16>()) {
                    (Ok(low), Ok(high)) => (low..=high).contains(&slot),
                    _ => false,
                }
            });
            if !serves {
                return None;
            }
            let port = fields[1]
                .split(['@', ':'])
                .nth(1)
                .and_then(|p| p.parse::<u16>().ok());
            self.nodes
                .iter()
                .position(|n| Some(n.addr().port()) == port)
        })
    }

    /// Move `slot` (and its keys) from its primary to the primary `to`, as
    /// `redis-cli --cluster reshard` does: mark it importing and migrating,
    /// `MIGRATE` its keys in batches, then give it to `to` everywhere.
    /// Clients meanwhile get `ASK` for keys already moved.
    pub async fn move_slot(&self, slot: u16, to: usize) {
        let from = self.primary_of(slot).await;
        assert_ne!(from, to, "slot {slot} is on node {to} already");
        let from_id = self.node_id(from).await;
        let to_id = self.node_id(to).await;
        let slot = slot.to_string();
        self.cli(to, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id])
            .await;
        self.cli(from, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id])
            .await;
        let target = self.nodes[to].addr();
        let (host, port) = (target.ip().to_string(), target.port().to_string());
        loop {
            let keys = self
                .cli(from, &["CLUSTER", "GETKEYSINSLOT", &slot, "100"])
                .await;
            let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
            if keys.is_empty() {
                break;
            }
            let mut migrate = vec!["MIGRATE", &host, &port, "", "0", "5000", "KEYS"];
            migrate.extend(keys);
            let moved = self.cli(from, &migrate).await;
            assert!(moved.contains("OK"), "MIGRATE: {moved}");
        }
        for node in [to, from] {
            self.cli(node, &["CLUSTER", "SETSLOT", &slot, "NODE", &to_id])
                .await;
        }
        for node in 0..self.nodes.len() {
            if node != to && node != from && self.nodes[node].is_running() {
                self.cli(node, &["CLUSTER", "SETSLOT", &slot, "NODE", &to_id])
                    .await;
            }
        }
    }

    /// Kill the primary `index` (`SIGKILL`) and wait until its replica is
    /// promoted and every slot is served again; returns how long that took.
    pub async fn kill_primary(&mut self, index: usize) -> Duration {
        let mine = self.cli(index, &["CLUSTER", "MYID"]).await;
        let slots = self.cli(index, &["CLUSTER", "NODES"]).await;
        let slot: u16 = slots
            .lines()
            .find(|line| line.starts_with(mine.trim()))
            .and_then(|line| line.split_whitespace().nth(8))
            .and_then(|range| range.split('-').next())
            .and_then(|low| low.parse().ok())
            .unwrap_or_else(|| panic!("node {index} serves no slot: {slots}"));
        let started = tokio::time::Instant::now();
        self.nodes[index].kill().await;
        let deadline = started + Duration::from_secs(30);
        loop {
            let nodes = self.cli(self.any_alive(), &["CLUSTER", "NODES"]).await;
            if self.serving(&nodes, slot).is_some_and(|now| now != index) {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no replica took over slot {slot} within 30 s: {nodes}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.wait_until_served(Duration::from_secs(30)).await;
        started.elapsed()
    }

    async fn node_id(&self, index: usize) -> String {
        self.cli(index, &["CLUSTER", "MYID"])
            .await
            .trim()
            .to_owned()
    }

    fn any_alive(&self) -> usize {
        self.nodes
            .iter()
            .position(RedisServer::is_running)
            .expect("a node of the cluster runs")
    }

    /// Wait until every running node says the cluster is ok, no primary it
    /// knows is failing, and every replica has its primary's data; panics
    /// after `limit`.
    async fn wait_until_served(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let mut served = true;
            for index in 0..self.nodes.len() {
                if !self.nodes[index].is_running() {
                    continue;
                }
                let info = self.cli(index, &["CLUSTER", "INFO"]).await;
                let nodes = self.cli(index, &["CLUSTER", "NODES"]).await;
                let failing_primary = nodes.lines().any(|line| {
                    let flags = line.split_whitespace().nth(2).unwrap_or("");
                    flags.contains("master")
                        && flags.contains("fail")
                        && line.split_whitespace().count() > 8
                });
                let replication = self.cli(index, &["INFO", "replication"]).await;
                let syncing = replication.contains("role:slave")
                    && !replication.contains("master_link_status:up");
                if !info.contains("cluster_state:ok") || failing_primary || syncing {
                    served = false;
                    break;
                }
            }
            if served {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the Redis Cluster did not serve every slot within {limit:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// `redis-cli ARGS`' standard output (and its error output, for messages).
async fn redis_cli(args: &[String]) -> String {
    let binary = std::env::var("BELAY_REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_owned());
    let output = Command::new(&binary)
        .args(args)
        .output()
        .await
        .unwrap_or_else(|e| {
            panic!("cannot run {binary} (the test command installs redis-tools): {e}")
        });
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    text
}
