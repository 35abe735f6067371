//! `cluster-bench`: benchmarks of Belay nodes on the Redis broker
//! (crates/belay-load/src/suites/cluster). Each node, the redis-server and the
//! load-client groups of `capacity` run as their own processes; CPU and RSS
//! are read from `/proc/PID`. Run it through `scripts/bench-cluster.sh`.
#![forbid(unsafe_code)]

/// The allocator `belay serve` uses too (see crates/belay-cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::time::Duration;

use belay_load::clients::target::parse_sources;
use belay_load::suites::cluster::capacity::{self, CapacityBench, HoldArgs};
use belay_load::suites::cluster::node::{self, NodeArgs};
use belay_load::suites::cluster::publish::{self, PublishBench};
use belay_load::suites::cluster::recovery::{self, RecoveryBench};
use belay_load::suites::cluster::shards::{self, ShardsBench};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cluster-bench", about = "Belay nodes on the Redis broker")]
struct Cli {
    /// Client source addresses (round-robin).
    #[arg(long, global = true, default_value = "127.0.0.1-127.0.0.40")]
    sources: String,
    /// The nodes' ping interval.
    #[arg(long, global = true, default_value_t = 10_000)]
    ping_interval_ms: u64,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// (internal) One node: print `LISTEN private=… shared=…`, exit when stdin closes.
    Node {
        #[arg(long, default_value = "memory")]
        broker: String,
        #[arg(long)]
        shared_port: Option<u16>,
        #[arg(long, default_value_t = 0)]
        wait_replicas: usize,
        /// --broker is a node of a Redis Cluster.
        #[arg(long)]
        redis_cluster: bool,
    },
    /// (internal) A group of load clients driven by stdin (see `cluster::capacity`).
    Hold {
        #[arg(long)]
        url: String,
        #[arg(long)]
        connections: usize,
        #[arg(long, default_value = "bench")]
        channel: String,
        #[arg(long, default_value_t = 10)]
        messages: u64,
        #[arg(long, default_value_t = 256)]
        handshakes: usize,
        #[arg(long, default_value_t = 256)]
        subscribes_in_flight: usize,
        /// The sessions' quiet time before they probe.
        #[arg(long, default_value_t = 20_000)]
        probe_interval_ms: u64,
    },
    /// Publishing through Redis on 1, 2, 4 nodes vs the memory broker and redis-benchmark.
    Publish {
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        nodes: Vec<usize>,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        #[arg(long, default_value_t = 8)]
        throughput_subscribers: usize,
        #[arg(long, default_value_t = 20_000)]
        throughput_messages: u64,
        /// Publishing tasks on the node, one throughput row each.
        #[arg(long, value_delimiter = ',', default_value = "1,16")]
        concurrency: Vec<u64>,
        #[arg(long, default_value_t = 1_000)]
        latency_subscribers: usize,
        #[arg(long, default_value_t = 1_000)]
        latency_messages: u64,
        #[arg(long, default_value_t = 100.0)]
        latency_rate: f64,
        #[arg(long, default_value_t = 100_000)]
        floor_requests: u64,
        /// Also 1 node on a primary with one replica, without and with
        /// `WAIT 1` before each publication is acknowledged.
        #[arg(long)]
        replicated: bool,
    },
    /// Publishing over many channels: one Redis vs Redis Clusters of 1, 3 … shards.
    Shards {
        /// Shard counts of the clusters, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,3")]
        shards: Vec<usize>,
        /// Belay nodes publishing at once.
        #[arg(long, default_value_t = 2)]
        nodes: usize,
        /// Channels the publications spread over.
        #[arg(long, default_value_t = 256)]
        channels: u64,
        /// Publications per run, over all nodes.
        #[arg(long, default_value_t = 40_000)]
        messages: u64,
        /// Publishing tasks per node.
        #[arg(long, default_value_t = 32)]
        concurrency: u64,
        #[arg(long, default_value_t = 3)]
        runs: usize,
    },
    /// Idle then subscribed sessions over nodes sharing a port (SO_REUSEPORT), then a broadcast.
    Capacity {
        #[arg(long, default_value_t = 10)]
        nodes: usize,
        /// Load-client processes.
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// Sessions per load-client process (at most 19,000).
        #[arg(long, default_value_t = 19_000)]
        per_client: usize,
        #[arg(long, default_value_t = 30)]
        hold_secs: u64,
        #[arg(long, default_value_t = 10)]
        messages: u64,
        #[arg(long, default_value_t = 1.0)]
        rate: f64,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Skip the single-node memory-broker baseline.
        #[arg(long)]
        no_baseline: bool,
        #[arg(long, default_value_t = 256)]
        handshakes: usize,
        /// Subscribes pending at once per load-client process (0: all at once).
        #[arg(long, default_value_t = 256)]
        subscribes_in_flight: usize,
    },
    /// kill -9 of node A under subscribed clients; time until all resume on B.
    Recovery {
        /// Fleet sizes on node A, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "10000")]
        clients: Vec<usize>,
        /// Window of the first dial after the loss, ms (0: at once), comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "0")]
        reconnect_window_ms: Vec<u64>,
        /// Longest wait from the kill for every client to catch up.
        #[arg(long, default_value_t = 60)]
        bound_secs: u64,
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Node B's publications per second, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "5")]
        rate: Vec<f64>,
        #[arg(long, default_value_t = 30.0)]
        publish_secs: f64,
        #[arg(long, default_value_t = 256)]
        handshakes: usize,
    },
}

fn main() -> Result<(), String> {
    let cli = Cli::parse();
    let sources = parse_sources(&cli.sources).map_err(|e| e.to_string())?;
    let ping_interval = Duration::from_millis(cli.ping_interval_ms.max(1_000));
    let runtime = belay_standalone::runtime::build().map_err(|e| e.to_string())?;
    match cli.command {
        Cmd::Node {
            broker,
            shared_port,
            wait_replicas,
            redis_cluster,
        } => runtime.block_on(node::serve(NodeArgs {
            broker,
            shared_port,
            ping_interval,
            wait_replicas,
            cluster: redis_cluster,
        })),
        Cmd::Shards {
            shards,
            nodes,
            channels,
            messages,
            concurrency,
            runs,
        } => runtime.block_on(shards::run(&ShardsBench {
            shards: shards.into_iter().map(|s| s.clamp(1, 8)).collect(),
            nodes: nodes.clamp(1, 8),
            channels: channels.clamp(1, 10_000),
            messages: messages.clamp(1, 1_000_000),
            concurrency: concurrency.clamp(1, 256),
            runs: runs.clamp(1, 10),
            sources,
            ping_interval,
        })),
        Cmd::Hold {
            url,
            connections,
            channel,
            messages,
            handshakes,
            subscribes_in_flight,
            probe_interval_ms,
        } => runtime.block_on(capacity::hold_main(HoldArgs {
            url,
            connections,
            sources,
            channel,
            messages,
            handshakes,
            subscribes_in_flight,
            probe_interval: Duration::from_millis(probe_interval_ms),
        })),
        Cmd::Publish {
            nodes,
            runs,
            throughput_subscribers,
            throughput_messages,
            concurrency,
            latency_subscribers,
            latency_messages,
            latency_rate,
            floor_requests,
            replicated,
        } => runtime.block_on(publish::run(&PublishBench {
            replicated,
            node_counts: nodes,
            runs: runs.clamp(1, 10),
            throughput_subscribers: throughput_subscribers.clamp(1, 10_000),
            throughput_messages: throughput_messages.clamp(1, 1_000_000),
            concurrency: concurrency.into_iter().map(|k| k.clamp(1, 256)).collect(),
            latency_subscribers: latency_subscribers.clamp(1, 19_000),
            latency_messages: latency_messages.clamp(1, 100_000),
            latency_rate,
            floor_requests: floor_requests.clamp(1, 10_000_000),
            sources,
            ping_interval,
        })),
        Cmd::Capacity {
            nodes,
            clients,
            per_client,
            hold_secs,
            messages,
            rate,
            runs,
            no_baseline,
            handshakes,
            subscribes_in_flight,
        } => runtime.block_on(capacity::run(&CapacityBench {
            nodes: nodes.clamp(1, 32),
            clients: clients.clamp(1, 32),
            per_client: per_client.clamp(1, capacity::MAX_PER_PROCESS),
            hold: Duration::from_secs(hold_secs.min(600)),
            messages: messages.clamp(1, 1_000),
            rate,
            runs: runs.clamp(1, 10),
            baseline: !no_baseline,
            sources,
            handshakes,
            subscribes_in_flight,
            ping_interval,
        })),
        Cmd::Recovery {
            clients,
            reconnect_window_ms,
            bound_secs,
            runs,
            rate,
            publish_secs,
            handshakes,
        } => runtime.block_on(recovery::run(&RecoveryBench {
            clients: clients.into_iter().map(|n| n.clamp(1, 19_000)).collect(),
            reconnect_windows: reconnect_window_ms
                .into_iter()
                .map(|ms| Duration::from_millis(ms.min(60_000)))
                .collect(),
            bound: Duration::from_secs(bound_secs.clamp(1, 600)),
            runs: runs.clamp(1, 10),
            rates: rate.into_iter().map(|r| r.clamp(1.0, 1_000.0)).collect(),
            publish_secs: publish_secs.clamp(1.0, 300.0),
            handshakes,
            sources,
            ping_interval,
        })),
    }
}
