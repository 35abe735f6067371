//! Publishing through Redis on 1, 2 and 4 nodes, against the same server on
//! the memory broker and against `redis-benchmark … PUBLISH` on the same
//! redis-server.
//!
//! For each setup and run, fresh node processes share the run's
//! redis-server; subscribers are spread evenly over the nodes (subscriber
//! `i` on node `i % N`) and node 0 publishes with `bench.publish`:
//!
//! * **throughput**: a few subscribers, M publications back to back (rate
//!   10⁶/s) from `concurrency` tasks each awaiting its publications in turn;
//!   publications/s as the node measured them (first start to last
//!   completion), and whether every subscriber got every one, in order;
//! * **latency**: many subscribers, publications at a moderate rate;
//!   publish→delivery p50/p99 and CPU seconds (every node process plus
//!   redis-server, utime + stime from `/proc`) per million deliveries.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::node::NodeProcess;
use super::redis::{self, RedisProcess};
use super::subscribers::{self, PublishRequest, SubscribeConfig};
use super::{cpu_seconds, med, spread};
use crate::clients::websocket::{self, wall_micros};
use crate::measure::stats::ms;

/// What to run.
#[derive(Debug, Clone)]
pub struct PublishBench {
    /// Node counts on Redis (1, 2, 4).
    pub node_counts: Vec<usize>,
    /// Runs of every setup (interleaved).
    pub runs: usize,
    /// Subscribers in the throughput test.
    pub throughput_subscribers: usize,
    /// Publications in the throughput test.
    pub throughput_messages: u64,
    /// Publishing tasks on the node in the throughput test (one row each);
    /// `redis-benchmark` runs with as many clients (`-c`).
    pub concurrency: Vec<u64>,
    /// Subscribers in the latency test.
    pub latency_subscribers: usize,
    /// Publications in the latency test.
    pub latency_messages: u64,
    /// Their rate (publications/s).
    pub latency_rate: f64,
    /// Requests per `redis-benchmark` run.
    pub floor_requests: u64,
    /// Client source addresses.
    pub sources: Vec<IpAddr>,
    /// The nodes' ping interval.
    pub ping_interval: Duration,
    /// Also 1 node on a primary with one replica (its own pair), without
    /// and with `wait_replicas = 1`: what durability costs.
    pub replicated: bool,
}

/// One setup: how many nodes on which broker.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Setup {
    name: String,
    nodes: usize,
    redis: bool,
    /// On the primary that has a replica.
    replicated: bool,
    /// Publications wait for this many replicas.
    wait_replicas: usize,
}

/// The figures of one setup in one run.
#[derive(Debug, Default, Clone)]
struct RunFigures {
    /// Per concurrency: node-side publications/s.
    pubs_per_sec: Vec<f64>,
    /// Per concurrency: publications/s from the request to the last delivery.
    delivered_per_sec: Vec<f64>,
    p50_ms: f64,
    p99_ms: f64,
    cpu_per_million: f64,
    /// Per concurrency: every subscriber got every publication, in order.
    throughput_complete: Vec<bool>,
    /// The same for the latency test.
    complete: bool,
}

/// Run the benchmark; markdown rows and `MEDIAN` lines on stdout.
pub async fn run(bench: &PublishBench) -> Result<(), String> {
    let redis = RedisProcess::start()?;
    println!(
        "redis-server {} (pid {}), `--save \"\" --appendonly no`",
        redis.url(),
        redis.pid()
    );
    let mut setups = vec![Setup {
        name: "memory, 1 node".into(),
        nodes: 1,
        redis: false,
        replicated: false,
        wait_replicas: 0,
    }];
    for &n in &bench.node_counts {
        setups.push(Setup {
            name: format!("redis, {n} node{}", if n == 1 { "" } else { "s" }),
            nodes: n.clamp(1, 16),
            redis: true,
            replicated: false,
            wait_replicas: 0,
        });
    }
    // A primary and its replica of their own, so the rows above keep a
    // Redis that replicates to nobody.
    let pair = if bench.replicated {
        let primary = RedisProcess::start()?;
        let replica = RedisProcess::start_replica_of(&primary)?;
        println!(
            "replicated pair: primary {} (pid {}), replica {} (pid {})",
            primary.url(),
            primary.pid(),
            replica.url(),
            replica.pid()
        );
        for wait_replicas in [0, 1] {
            setups.push(Setup {
                name: format!("redis + 1 replica, 1 node, wait_replicas {wait_replicas}"),
                nodes: 1,
                redis: true,
                replicated: true,
                wait_replicas,
            });
        }
        Some((primary, replica))
    } else {
        None
    };
    let mut figures: Vec<Vec<RunFigures>> = vec![Vec::new(); setups.len()];
    let mut floor: Vec<Vec<f64>> = vec![Vec::new(); bench.concurrency.len()];
    let mut floor_p50: Vec<Vec<f64>> = vec![Vec::new(); bench.concurrency.len()];
    let mut epoch_len = 17;
    println!();
    println!("| run | setup | test | subscribers | publications | publications/s (node) | publications/s (to last delivery) | deliveries / expected | gaps | p50 (ms) | p99 (ms) | CPU s (nodes + redis) | CPU s per 10⁶ deliveries |");
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for run in 1..=bench.runs {
        for (s, setup) in setups.iter().enumerate() {
            let on = match (&pair, setup.replicated) {
                (Some((primary, replica)), true) => Backing {
                    redis: primary,
                    replica: Some(replica),
                },
                _ => Backing {
                    redis: &redis,
                    replica: None,
                },
            };
            let f = run_setup(bench, &on, setup, run, &mut epoch_len).await?;
            figures[s].push(f);
        }
        // The floor: redis-benchmark PUBLISH with a payload as long as the
        // message Belay's script publishes (`OFFSET:EPOCH:DATA`).
        let payload_len = format!(
            "{}:{}:{}",
            bench.throughput_messages,
            "e".repeat(epoch_len),
            serde_json::json!({"n": bench.throughput_messages, "t": wall_micros()})
        )
        .len();
        for (i, &k) in bench.concurrency.iter().enumerate() {
            let requests = bench.floor_requests;
            let port = redis.port();
            let b = tokio::task::spawn_blocking(move || {
                redis::publish_floor(port, requests, k as usize, "bench.floor", payload_len)
            })
            .await
            .map_err(|e| e.to_string())??;
            println!(
                "| {run} | redis-benchmark PUBLISH, {payload_len} B, -c {k} | throughput | 0 | {requests} | {:.0} | - | - | - | {:.3} | {:.3} | - | - |",
                b.rps, b.p50_ms, b.p99_ms
            );
            floor[i].push(b.rps);
            floor_p50[i].push(b.p50_ms);
        }
    }
    println!();
    let mut out = String::new();
    let memory = &figures[0];
    for (i, &k) in bench.concurrency.iter().enumerate() {
        let floor_median = med(&floor[i]);
        let memory_median = med(&memory.iter().map(|f| f.pubs_per_sec[i]).collect::<Vec<_>>());
        let _ = writeln!(
            out,
            "MEDIAN publish throughput, concurrency {k}: redis-benchmark {} publications/s (p50 {} ms)",
            spread(&floor[i], 0),
            spread(&floor_p50[i], 3)
        );
        for (s, setup) in setups.iter().enumerate() {
            let v: Vec<f64> = figures[s].iter().map(|f| f.pubs_per_sec[i]).collect();
            let d: Vec<f64> = figures[s].iter().map(|f| f.delivered_per_sec[i]).collect();
            let complete = figures[s]
                .iter()
                .filter(|f| f.throughput_complete[i])
                .count();
            let _ = writeln!(
                out,
                "MEDIAN publish throughput, concurrency {k}: {}: {} publications/s ({:.3}x memory, {:.3}x redis-benchmark); to last delivery {}; every subscriber got every publication in {complete} of {} runs",
                setup.name,
                spread(&v, 0),
                med(&v) / memory_median,
                med(&v) / floor_median,
                spread(&d, 0),
                figures[s].len()
            );
        }
    }
    let memory_p50 = med(&memory.iter().map(|f| f.p50_ms).collect::<Vec<_>>());
    let memory_p99 = med(&memory.iter().map(|f| f.p99_ms).collect::<Vec<_>>());
    let memory_cpu = med(&memory.iter().map(|f| f.cpu_per_million).collect::<Vec<_>>());
    for (s, setup) in setups.iter().enumerate() {
        let f = &figures[s];
        let p50: Vec<f64> = f.iter().map(|f| f.p50_ms).collect();
        let p99: Vec<f64> = f.iter().map(|f| f.p99_ms).collect();
        let cpu: Vec<f64> = f.iter().map(|f| f.cpu_per_million).collect();
        let complete = f.iter().filter(|f| f.complete).count();
        let _ = writeln!(
            out,
            "MEDIAN latency at {} /s, {} subscribers: {}: p50 {} ms ({:.2}x memory), p99 {} ms ({:.2}x memory), CPU {} s per 10^6 deliveries ({:.2}x memory); complete in {complete} of {} runs",
            bench.latency_rate,
            bench.latency_subscribers,
            setup.name,
            spread(&p50, 2),
            med(&p50) / memory_p50,
            spread(&p99, 2),
            med(&p99) / memory_p99,
            spread(&cpu, 2),
            med(&cpu) / memory_cpu,
            f.len()
        );
    }
    print!("{out}");
    Ok(())
}

/// The Redis a setup runs on, and its replica (whose CPU counts too).
struct Backing<'a> {
    redis: &'a RedisProcess,
    replica: Option<&'a RedisProcess>,
}

async fn run_setup(
    bench: &PublishBench,
    backing: &Backing<'_>,
    setup: &Setup,
    run: usize,
    epoch_len: &mut usize,
) -> Result<RunFigures, String> {
    let redis = backing.redis;
    let broker = if setup.redis {
        redis.url()
    } else {
        "memory".into()
    };
    let mut nodes = Vec::new();
    for _ in 0..setup.nodes {
        nodes.push(
            NodeProcess::start_waiting(&broker, None, bench.ping_interval, setup.wait_replicas)
                .await?,
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let targets: Vec<_> = nodes.iter().map(|n| n.private.clone()).collect();
    let mut pids: Vec<u32> = nodes.iter().map(NodeProcess::pid).collect();
    if setup.redis {
        pids.push(redis.pid());
    }
    if let Some(replica) = backing.replica {
        pids.push(replica.pid());
    }
    let mut figures = RunFigures::default();
    let tag = format!(
        "{}n{}w{}r{run}",
        if setup.redis { "redis" } else { "mem" },
        setup.nodes,
        setup.wait_replicas
    );
    for &k in &bench.concurrency {
        let channel = format!("tput.{tag}.c{k}");
        let config = SubscribeConfig::new(
            &channel,
            bench.throughput_subscribers,
            bench.throughput_messages,
            bench.sources.clone(),
        );
        let subs = subscribers::subscribe(&targets, &config)
            .await
            .map_err(|e| e.to_string())?;
        let cpu_before = cpu_seconds(&pids);
        let started = Instant::now();
        let request = PublishRequest {
            channel,
            messages: bench.throughput_messages,
            rate: 1e6,
            concurrency: k,
            channels: 1,
        };
        let source = websocket::source_for(&bench.sources, bench.throughput_subscribers);
        let answer = subscribers::publish(&targets[0], source, &request, Duration::from_secs(300))
            .await
            .map_err(|e| e.to_string())?;
        if !answer.epoch.is_empty() && setup.redis {
            *epoch_len = answer.epoch.len();
        }
        let mut report = subs.collect().await;
        let cpu = cpu_seconds(&pids) - cpu_before;
        let to_last = report
            .last_delivery
            .map_or(Duration::ZERO, |t| t.saturating_duration_since(started));
        let delivered_rate = answer.published as f64 / to_last.as_secs_f64().max(1e-9);
        let ok = report.deliveries == report.expected && report.gaps == 0 && answer.failed == 0;
        figures.throughput_complete.push(ok);
        println!(
            "| {run} | {} | throughput, concurrency {k} | {} | {} | {:.0} | {delivered_rate:.0} | {} / {} | {} | {} | {} | {cpu:.2} | {:.2} |",
            setup.name,
            report.subscribers,
            answer.published,
            answer.per_sec(),
            report.deliveries,
            report.expected,
            report.gaps,
            ms(report.latencies.percentile(50.0)),
            ms(report.latencies.percentile(99.0)),
            cpu * 1e6 / report.deliveries.max(1) as f64,
        );
        if let Some(e) = &report.first_error {
            eprintln!("{} throughput c{k}: first problem: {e}", setup.name);
        }
        figures.pubs_per_sec.push(answer.per_sec());
        figures.delivered_per_sec.push(delivered_rate);
    }
    // Latency at a moderate rate.
    let channel = format!("lat.{tag}");
    let config = SubscribeConfig::new(
        &channel,
        bench.latency_subscribers,
        bench.latency_messages,
        bench.sources.clone(),
    );
    let subs = subscribers::subscribe(&targets, &config)
        .await
        .map_err(|e| e.to_string())?;
    let cpu_before = cpu_seconds(&pids);
    let request = PublishRequest {
        channel,
        messages: bench.latency_messages,
        rate: bench.latency_rate,
        concurrency: 1,
        channels: 1,
    };
    let source = websocket::source_for(&bench.sources, bench.latency_subscribers);
    let answer = subscribers::publish(&targets[0], source, &request, Duration::from_secs(300))
        .await
        .map_err(|e| e.to_string())?;
    let mut report = subs.collect().await;
    let cpu = cpu_seconds(&pids) - cpu_before;
    let ok = report.deliveries == report.expected && report.gaps == 0 && answer.failed == 0;
    figures.complete = ok;
    let p50 = report.latencies.percentile(50.0);
    let p99 = report.latencies.percentile(99.0);
    figures.p50_ms = p50.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    figures.p99_ms = p99.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    figures.cpu_per_million = cpu * 1e6 / report.deliveries.max(1) as f64;
    println!(
        "| {run} | {} | latency at {}/s | {} | {} | {:.0} | - | {} / {} | {} | {} | {} | {cpu:.2} | {:.2} |",
        setup.name,
        bench.latency_rate,
        report.subscribers,
        answer.published,
        answer.per_sec(),
        report.deliveries,
        report.expected,
        report.gaps,
        ms(p50),
        ms(p99),
        figures.cpu_per_million,
    );
    if let Some(e) = &report.first_error {
        eprintln!("{} latency: first problem: {e}", setup.name);
    }
    for node in nodes {
        node.stop().await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(figures)
}
