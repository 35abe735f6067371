//! Publishing over many channels on one Redis against Redis Clusters of 1,
//! 3 … shards, in the same run: does sharding scale?
//!
//! For each setup and run a fresh Redis (or cluster) and fresh node
//! processes; every node publishes its share of the publications back to
//! back over `channels` channels (the slots spread them over the shards).
//! Two figures:
//!
//! * **publications/s**, over all nodes (first start to last completion);
//!   on a small machine the nodes and every redis-server share the same
//!   cores, so this is the whole system's rate;
//! * **the busiest shard's ceiling**: publications/s at which the
//!   busiest redis-server would use a whole core (10⁶ / its CPU seconds per
//!   10⁶ publications). Redis runs commands on one thread, so that is the
//!   rate the broker tops out at when the nodes have cores of their own.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::node::NodeProcess;
use super::redis::RedisProcess;
use super::redis_cluster::RedisClusterProcesses;
use super::subscribers::{self, PublishRequest};
use super::{cpu_seconds, med, spread};
use crate::clients::websocket;

/// What to run.
#[derive(Debug, Clone)]
pub struct ShardsBench {
    /// Shard counts of the clusters.
    pub shards: Vec<usize>,
    /// Belay nodes publishing at once.
    pub nodes: usize,
    /// Channels the publications spread over.
    pub channels: u64,
    /// Publications per run, over all nodes.
    pub messages: u64,
    /// Publishing tasks per node.
    pub concurrency: u64,
    /// Runs of every setup (interleaved).
    pub runs: usize,
    /// Client source addresses.
    pub sources: Vec<std::net::IpAddr>,
    /// The nodes' ping interval.
    pub ping_interval: Duration,
}

/// What the nodes run on.
enum Backing {
    Single(RedisProcess),
    Cluster(RedisClusterProcesses),
}

impl Backing {
    fn start(shards: Option<usize>) -> Result<Backing, String> {
        match shards {
            None => RedisProcess::start().map(Backing::Single),
            Some(shards) => RedisClusterProcesses::start(shards).map(Backing::Cluster),
        }
    }

    fn redis_pids(&self) -> Vec<u32> {
        match self {
            Backing::Single(redis) => vec![redis.pid()],
            Backing::Cluster(cluster) => cluster.primaries.iter().map(RedisProcess::pid).collect(),
        }
    }

    async fn node(&self, ping_interval: Duration) -> Result<NodeProcess, String> {
        match self {
            Backing::Single(redis) => NodeProcess::start(&redis.url(), None, ping_interval).await,
            Backing::Cluster(cluster) => {
                NodeProcess::start_on_cluster(&cluster.seed(), ping_interval).await
            }
        }
    }
}

/// One setup's figures in one run.
#[derive(Debug, Clone, Copy)]
struct RunFigures {
    per_sec: f64,
    ceiling: f64,
    failed: u64,
}

fn name(shards: Option<usize>) -> String {
    match shards {
        None => "one Redis".into(),
        Some(1) => "Redis Cluster, 1 shard".into(),
        Some(n) => format!("Redis Cluster, {n} shards"),
    }
}

/// Run the benchmark; markdown rows and `MEDIAN` lines on stdout.
pub async fn run(bench: &ShardsBench) -> Result<(), String> {
    let setups: Vec<Option<usize>> = std::iter::once(None)
        .chain(bench.shards.iter().copied().map(Some))
        .collect();
    let mut figures: Vec<Vec<RunFigures>> = vec![Vec::new(); setups.len()];
    println!(
        "{} nodes x {} publishing tasks, {} publications over {} channels per run",
        bench.nodes, bench.concurrency, bench.messages, bench.channels
    );
    println!();
    println!("| run | setup | publications | refused | publications/s | CPU s per 10⁶: nodes | all redis-servers | busiest redis-server | busiest shard's ceiling (publications/s) |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    for run in 1..=bench.runs {
        for (s, &shards) in setups.iter().enumerate() {
            let f = run_setup(bench, shards, run).await?;
            figures[s].push(f);
        }
    }
    println!();
    let base_rate = med(&figures[0].iter().map(|f| f.per_sec).collect::<Vec<_>>());
    let base_ceiling = med(&figures[0].iter().map(|f| f.ceiling).collect::<Vec<_>>());
    let mut out = String::new();
    for (s, &shards) in setups.iter().enumerate() {
        let rate: Vec<f64> = figures[s].iter().map(|f| f.per_sec).collect();
        let ceiling: Vec<f64> = figures[s].iter().map(|f| f.ceiling).collect();
        let refused: u64 = figures[s].iter().map(|f| f.failed).sum();
        let _ = writeln!(
            out,
            "MEDIAN shards: {}: {} publications/s ({:.2}x one Redis); busiest shard's ceiling {} publications/s ({:.2}x one Redis); {refused} refused in {} runs",
            name(shards),
            spread(&rate, 0),
            med(&rate) / base_rate,
            spread(&ceiling, 0),
            med(&ceiling) / base_ceiling,
            figures[s].len()
        );
    }
    print!("{out}");
    Ok(())
}

async fn run_setup(
    bench: &ShardsBench,
    shards: Option<usize>,
    run: usize,
) -> Result<RunFigures, String> {
    let backing = Backing::start(shards)?;
    let mut nodes = Vec::with_capacity(bench.nodes);
    for _ in 0..bench.nodes {
        nodes.push(backing.node(bench.ping_interval).await?);
    }
    // Each node's PUB/SUB and command connections settle before the clock starts.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let redis_pids = backing.redis_pids();
    let node_pids: Vec<u32> = nodes.iter().map(NodeProcess::pid).collect();
    let redis_before: Vec<f64> = redis_pids.iter().map(|&p| cpu_seconds(&[p])).collect();
    let nodes_before = cpu_seconds(&node_pids);
    let share = bench.messages / bench.nodes as u64;
    let started = Instant::now();
    let mut publishing = tokio::task::JoinSet::new();
    for (i, node) in nodes.iter().enumerate() {
        let target = node.private.clone();
        let source = websocket::source_for(&bench.sources, i);
        let request = PublishRequest {
            channel: format!("shards.r{run}.n{i}"),
            messages: share,
            rate: 1e6,
            concurrency: bench.concurrency,
            channels: bench.channels,
        };
        publishing.spawn(async move {
            subscribers::publish(&target, source, &request, Duration::from_secs(600)).await
        });
    }
    let (mut published, mut failed) = (0u64, 0u64);
    while let Some(done) = publishing.join_next().await {
        let answer = done
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        published += answer.published;
        failed += answer.failed;
    }
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    let redis_cpu: Vec<f64> = redis_pids
        .iter()
        .zip(&redis_before)
        .map(|(&p, before)| cpu_seconds(&[p]) - before)
        .collect();
    let nodes_cpu = cpu_seconds(&node_pids) - nodes_before;
    let per_million = |cpu: f64| cpu * 1e6 / published.max(1) as f64;
    let busiest = redis_cpu.iter().copied().fold(0.0, f64::max);
    let all_redis: f64 = redis_cpu.iter().sum();
    let figures = RunFigures {
        per_sec: published as f64 / elapsed,
        ceiling: 1e6 / per_million(busiest).max(1e-9),
        failed,
    };
    println!(
        "| {run} | {} | {published} | {failed} | {:.0} | {:.2} | {:.2} | {:.2} | {:.0} |",
        name(shards),
        figures.per_sec,
        per_million(nodes_cpu),
        per_million(all_redis),
        per_million(busiest),
        figures.ceiling
    );
    Ok(figures)
}
