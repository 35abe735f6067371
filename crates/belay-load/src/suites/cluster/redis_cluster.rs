//! A Redis Cluster of the benchmark's own: `shards` primaries without
//! replicas (a replica costs the same CPU on every setup, and one Redis has
//! none), each a [`RedisProcess`] with cluster mode on, given an equal
//! share of the 16,384 slots and introduced to each other with
//! `redis-cli`.

use std::process::Command;
use std::time::{Duration, Instant};

use super::redis::{free_port, RedisProcess};

/// The primaries of one cluster, stopped when dropped.
#[derive(Debug)]
pub struct RedisClusterProcesses {
    /// One per shard.
    pub primaries: Vec<RedisProcess>,
}

impl RedisClusterProcesses {
    /// Start `shards` primaries and wait, at most 30 s, until every one
    /// says `cluster_state:ok`.
    pub fn start(shards: usize) -> Result<RedisClusterProcesses, String> {
        let mut primaries = Vec::with_capacity(shards);
        let mut buses = Vec::with_capacity(shards);
        for _ in 0..shards.max(1) {
            let bus = free_port().map_err(|e| e.to_string())?.to_string();
            buses.push(bus.clone());
            primaries.push(RedisProcess::start_with(&[
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-port",
                &bus,
            ])?);
        }
        let share = 16_384 / primaries.len();
        for (i, primary) in primaries.iter().enumerate() {
            let low = i * share;
            let high = if i + 1 == primaries.len() {
                16_383
            } else {
                (i + 1) * share - 1
            };
            let added = cli(
                primary.port(),
                &[
                    "CLUSTER",
                    "ADDSLOTSRANGE",
                    &low.to_string(),
                    &high.to_string(),
                ],
            )?;
            if !added.contains("OK") {
                return Err(format!("CLUSTER ADDSLOTSRANGE: {added}"));
            }
        }
        // The bus port is named: it is not the default (port + 10,000).
        let first = primaries[0].port().to_string();
        for primary in &primaries[1..] {
            cli(
                primary.port(),
                &["CLUSTER", "MEET", "127.0.0.1", &first, &buses[0]],
            )?;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let mut ok = true;
            for primary in &primaries {
                ok &= cli(primary.port(), &["CLUSTER", "INFO"])?.contains("cluster_state:ok");
            }
            if ok {
                return Ok(RedisClusterProcesses { primaries });
            }
            if Instant::now() > deadline {
                return Err("the cluster did not serve every slot within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A node to learn the cluster from.
    pub fn seed(&self) -> String {
        self.primaries[0].url()
    }
}

/// `redis-cli -p PORT ARGS`' output.
fn cli(port: u16, args: &[&str]) -> Result<String, String> {
    let output = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .map_err(|e| format!("redis-cli (Debian: redis-tools): {e}"))?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}
