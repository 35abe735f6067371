//! Capacity across nodes that share one port with `SO_REUSEPORT` (no
//! balancer: the kernel spreads new connections over the listeners).
//!
//! Each process may hold at most 20,000 descriptors here, so the load
//! clients are split over `cluster-bench hold` child processes (each at
//! most 19,000 sessions, sources 127.0.0.1–127.0.0.40 round-robin), driven
//! by lines on their stdin:
//!
//! ```text
//! parent                         hold child (core sessions answer pings all along)
//!   (start)                 ──▶  opens N sessions            ──▶ OPENED ok failed ms first-error
//!   alive                   ──▶                              ──▶ ALIVE n
//!   subscribe               ──▶  every session subscribes    ──▶ SUBSCRIBED ok refused retried ms first-refusal
//!   collect SECS            ──▶  waits for M publications    ──▶ RECEIVED deliveries complete gaps last-wall-µs resumed not-recovered first-problem
//!                                                            ──▶ LAT µs,µs,…
//!   (stdin closed)          ──▶  closes every session, exits
//! ```
//!
//! A run measures the cluster (N nodes on Redis, one shared port) and, as
//! its baseline, one node on the memory broker with one child's worth of
//! connections: node RSS per connection idle (after a hold with heartbeats)
//! and subscribed, CPU over the hold, then a broadcast from node 0 that
//! must reach every subscriber on every node.
//!
//! The files: `hold` (a hold child's main and its protocol), `session` (one
//! held session on the core's `Session`), and this one (the parent: the
//! runs, the hold processes, the figures).

use std::fmt::Write as _;
use std::net::IpAddr;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::node::NodeProcess;
use super::redis::{free_port, RedisProcess};
use super::subscribers::{self, PublishRequest};
use super::{cpu_seconds, med, spread};
use crate::clients::target::Target;
use crate::clients::websocket::{self, wall_micros};
use crate::measure::procfs::CLK_TCK;
use crate::measure::stats::{ms, Latencies};

mod hold;
mod session;

pub use hold::{hold_main, HoldArgs};

/// Most sessions one hold process opens (its descriptor limit is 20,000).
pub const MAX_PER_PROCESS: usize = 19_000;

/// A hold child process, seen from the benchmark. Killed when dropped.
struct HoldProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl HoldProcess {
    fn start(args: &HoldArgs) -> Result<HoldProcess, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let sources: Vec<String> = args.sources.iter().map(ToString::to_string).collect();
        let mut child = Command::new(exe)
            .args(["hold", "--url", &args.url])
            .args(["--connections", &args.connections.to_string()])
            .args(["--sources", &sources.join(",")])
            .args(["--channel", &args.channel])
            .args(["--messages", &args.messages.to_string()])
            .args(["--handshakes", &args.handshakes.to_string()])
            .args([
                "--subscribes-in-flight",
                &args.subscribes_in_flight.to_string(),
            ])
            .args([
                "--probe-interval-ms",
                &args.probe_interval.as_millis().to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start a hold process: {e}"))?;
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        Ok(HoldProcess {
            child,
            stdin,
            lines,
        })
    }

    fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    async fn send(&mut self, command: &str) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("stopped")?;
        stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        stdin.flush().await.map_err(|e| e.to_string())
    }

    /// The `fields` words after `prefix` on the next line that starts
    /// with it (the last one holds the rest of the line).
    async fn expect(
        &mut self,
        prefix: &str,
        fields: usize,
        bound: Duration,
    ) -> Result<Vec<String>, String> {
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let line = tokio::time::timeout_at(deadline, self.lines.next_line())
                .await
                .map_err(|_| format!("no {prefix} line within {bound:?}"))?
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("the hold process exited before {prefix}"))?;
            if let Some(rest) = line.strip_prefix(prefix) {
                return Ok(rest
                    .trim()
                    .splitn(fields, ' ')
                    .map(str::to_owned)
                    .collect::<Vec<_>>());
            }
        }
    }

    async fn stop(mut self) {
        drop(self.stdin.take());
        if tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.start_kill();
            let _ = self.child.wait().await;
        }
    }
}

fn word<T: std::str::FromStr>(words: &[String], i: usize) -> Result<T, String> {
    words
        .get(i)
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| format!("unexpected hold output {words:?}"))
}

/// What to run.
#[derive(Debug, Clone)]
pub struct CapacityBench {
    /// Nodes on Redis sharing one port.
    pub nodes: usize,
    /// Hold processes.
    pub clients: usize,
    /// Sessions per hold process (at most [`MAX_PER_PROCESS`]).
    pub per_client: usize,
    /// Seconds to hold the idle sessions (CPU over the hold).
    pub hold: Duration,
    /// Publications of the broadcast.
    pub messages: u64,
    /// Their rate.
    pub rate: f64,
    /// Runs (each: baseline, then cluster).
    pub runs: usize,
    /// Whether to measure the single-node baseline in each run.
    pub baseline: bool,
    /// Source addresses.
    pub sources: Vec<IpAddr>,
    /// Handshakes in flight per hold process.
    pub handshakes: usize,
    /// Subscribes pending at once per hold process (0: all at once).
    pub subscribes_in_flight: usize,
    /// The nodes' ping interval.
    pub ping_interval: Duration,
}

#[derive(Debug, Default, Clone)]
struct Figures {
    opened: f64,
    idle_bytes: f64,
    subscribed_bytes: f64,
    cpu_us: f64,
    deliveries_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    complete: bool,
}

/// Run the benchmark; markdown rows and `MEDIAN` lines on stdout.
pub async fn run(bench: &CapacityBench) -> Result<(), String> {
    let redis = RedisProcess::start()?;
    println!("redis-server {} (pid {})", redis.url(), redis.pid());
    println!();
    println!("| run | setup | sessions opened / asked | alive after hold | per node (min–max) | idle B/conn per node, median (min–max) | all subscribed after (s) | subscribes refused and retried | subscribed B/conn, median (min–max) | CPU µs per conn·s over the hold (nodes) | deliveries / expected | gaps | subscriptions lost and resumed (not recovered) | deliveries/s | p50 (ms) | p99 (ms) | load clients' RSS (MiB) |");
    println!(
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut base = Vec::new();
    let mut cluster = Vec::new();
    for run in 1..=bench.runs {
        if bench.baseline {
            let nodes = vec![NodeProcess::start("memory", None, bench.ping_interval).await?];
            let target = nodes[0].private.clone();
            let f = measure(bench, run, "memory, 1 node", nodes, &target, 1, None).await?;
            base.push(f);
        }
        let port = free_port().map_err(|e| e.to_string())?;
        let mut nodes = Vec::new();
        for _ in 0..bench.nodes {
            nodes.push(NodeProcess::start(&redis.url(), Some(port), bench.ping_interval).await?);
        }
        let target = nodes[0].shared.clone().ok_or("no shared port")?;
        let name = format!("redis, {} nodes, SO_REUSEPORT", bench.nodes);
        let f = measure(
            bench,
            run,
            &name,
            nodes,
            &target,
            bench.clients,
            Some(redis.pid()),
        )
        .await?;
        cluster.push(f);
    }
    println!();
    let pick = |v: &[Figures], f: fn(&Figures) -> f64| v.iter().map(f).collect::<Vec<f64>>();
    let mut out = String::new();
    type Row = (&'static str, fn(&Figures) -> f64, usize);
    let rows: [Row; 7] = [
        ("sessions opened", |f| f.opened, 0),
        (
            "idle bytes per connection (node median)",
            |f| f.idle_bytes,
            0,
        ),
        (
            "subscribed bytes per connection (node median)",
            |f| f.subscribed_bytes,
            0,
        ),
        ("CPU µs per connection·s over the hold", |f| f.cpu_us, 2),
        ("broadcast deliveries/s", |f| f.deliveries_per_sec, 0),
        ("broadcast p50 ms", |f| f.p50_ms, 1),
        ("broadcast p99 ms", |f| f.p99_ms, 1),
    ];
    for (what, get, digits) in rows {
        let c = pick(&cluster, get);
        if bench.baseline {
            let b = pick(&base, get);
            let _ = writeln!(
                out,
                "MEDIAN capacity {what}: cluster {}, single memory node {}, cluster/single {:.2}x",
                spread(&c, digits),
                spread(&b, digits),
                med(&c) / med(&b)
            );
        } else {
            let _ = writeln!(
                out,
                "MEDIAN capacity {what}: cluster {}",
                spread(&c, digits)
            );
        }
    }
    let complete = cluster.iter().filter(|f| f.complete).count();
    let _ = writeln!(
        out,
        "MEDIAN capacity: every session opened, alive, subscribed and served in {complete} of {} cluster runs",
        cluster.len()
    );
    print!("{out}");
    Ok(())
}

/// One setup of one run: open, hold, subscribe, broadcast, stop.
async fn measure(
    bench: &CapacityBench,
    run: usize,
    name: &str,
    mut nodes: Vec<NodeProcess>,
    target: &Target,
    clients: usize,
    redis_pid: Option<u32>,
) -> Result<Figures, String> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let base: Vec<u64> = nodes
        .iter()
        .map(|n| n.sample().map(|s| s.rss_kib))
        .collect::<Result<_, _>>()?;
    let channel = format!("cap.r{run}.n{}", nodes.len());
    let per = bench.per_client.min(MAX_PER_PROCESS);
    let asked = per * clients;
    let args = HoldArgs {
        url: target.uri.to_string(),
        connections: per,
        sources: bench.sources.clone(),
        channel: channel.clone(),
        messages: bench.messages,
        handshakes: bench.handshakes,
        subscribes_in_flight: bench.subscribes_in_flight,
        probe_interval: bench.ping_interval * 2,
    };
    let mut holds = Vec::new();
    for _ in 0..clients {
        holds.push(HoldProcess::start(&args)?);
    }
    let mut opened = 0usize;
    for h in &mut holds {
        let w = h.expect("OPENED", 4, Duration::from_secs(900)).await?;
        opened += word::<usize>(&w, 0)?;
        if word::<usize>(&w, 1)? > 0 {
            eprintln!(
                "{name}: {} sessions failed to open: {}",
                w[1],
                w.get(3).map_or("", String::as_str)
            );
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let node_pids: Vec<u32> = nodes.iter().map(NodeProcess::pid).collect();
    let cpu_before: Vec<u64> = nodes
        .iter()
        .map(|n| n.sample().map(|s| s.cpu_ticks))
        .collect::<Result<_, _>>()?;
    tokio::time::sleep(bench.hold).await;
    let mut per_node = Vec::new();
    let mut idle_bytes = Vec::new();
    let mut cpu_ticks = 0u64;
    for (i, node) in nodes.iter_mut().enumerate() {
        let s = node.sample()?;
        let open = node.open_connections().await?.max(0) as usize;
        cpu_ticks += s.cpu_ticks.saturating_sub(cpu_before[i]);
        per_node.push(open);
        idle_bytes.push(s.rss_kib.saturating_sub(base[i]) as f64 * 1024.0 / open.max(1) as f64);
    }
    let mut alive = 0usize;
    for h in &mut holds {
        h.send("alive").await?;
        alive += word::<usize>(&h.expect("ALIVE", 1, Duration::from_secs(30)).await?, 0)?;
    }
    let total_open: usize = per_node.iter().sum();
    let cpu_us =
        cpu_ticks as f64 / CLK_TCK * 1e6 / (total_open.max(1) as f64 * bench.hold.as_secs_f64());
    // Subscribe everyone.
    let mut subscribed = 0usize;
    let (mut retried, mut subscribe_ms) = (0usize, 0u64);
    for h in &mut holds {
        h.send("subscribe").await?;
    }
    for h in &mut holds {
        let w = h.expect("SUBSCRIBED", 5, Duration::from_secs(900)).await?;
        subscribed += word::<usize>(&w, 0)?;
        retried += word::<usize>(&w, 2)?;
        subscribe_ms = subscribe_ms.max(word::<u64>(&w, 3)?);
        if word::<usize>(&w, 1)? > 0 || word::<usize>(&w, 2)? > 0 {
            eprintln!(
                "{name}: {} subscriptions refused for good, {} refusals retried: {}",
                w[1],
                w[2],
                w.get(4).map_or("", String::as_str)
            );
        }
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut subscribed_bytes = Vec::new();
    for (i, node) in nodes.iter_mut().enumerate() {
        let s = node.sample()?;
        subscribed_bytes
            .push(s.rss_kib.saturating_sub(base[i]) as f64 * 1024.0 / per_node[i].max(1) as f64);
    }
    // The broadcast, from node 0.
    let mut pids = node_pids.clone();
    pids.extend(redis_pid);
    let cpu0 = cpu_seconds(&pids);
    let start_wall = wall_micros();
    let request = PublishRequest {
        channel,
        messages: bench.messages,
        rate: bench.rate,
        concurrency: 1,
        channels: 1,
    };
    let collect_secs = (bench.messages as f64 / bench.rate) as u64 + 120;
    let answer = subscribers::publish(
        &nodes[0].private,
        websocket::source_for(&bench.sources, 0),
        &request,
        Duration::from_secs(collect_secs),
    )
    .await
    .map_err(|e| e.to_string())?;
    for h in &mut holds {
        h.send(&format!("collect {collect_secs}")).await?;
    }
    let (mut deliveries, mut gaps, mut last_wall, mut complete_sessions) = (0u64, 0u64, 0u64, 0);
    let (mut resumed, mut not_recovered) = (0u64, 0u64);
    let mut latencies = Latencies::new();
    for h in &mut holds {
        let w = h
            .expect("RECEIVED", 7, Duration::from_secs(collect_secs + 60))
            .await?;
        deliveries += word::<u64>(&w, 0)?;
        complete_sessions += word::<usize>(&w, 1)?;
        gaps += word::<u64>(&w, 2)?;
        last_wall = last_wall.max(word::<u64>(&w, 3)?);
        resumed += word::<u64>(&w, 4)?;
        not_recovered += word::<u64>(&w, 5)?;
        if w.get(6).is_some_and(|e| e != "-") {
            eprintln!("{name}: first delivery problem: {}", w[6]);
        }
        let lat = h.expect("LAT", 1, Duration::from_secs(60)).await?.join(" ");
        for v in lat.split(',').filter_map(|v| v.trim().parse::<u64>().ok()) {
            latencies.record_micros(v);
        }
    }
    let cpu = cpu_seconds(&pids) - cpu0;
    // Every session was asked to wait for every publication: one refused
    // by the broker counts as missing.
    let expected = subscribed as u64 * bench.messages;
    if answer.published != bench.messages {
        eprintln!(
            "{name}: node 0 published {} of {} (refused: {})",
            answer.published, bench.messages, answer.failed
        );
    }
    let elapsed = last_wall.saturating_sub(start_wall) as f64 / 1e6;
    let deliveries_per_sec = deliveries as f64 / elapsed.max(1e-9);
    let client_rss: u64 = holds
        .iter()
        .filter_map(HoldProcess::pid)
        .filter_map(|pid| crate::measure::procfs::sample(pid).ok())
        .map(|s| s.rss_kib)
        .sum();
    let (p50, p99) = (latencies.percentile(50.0), latencies.percentile(99.0));
    let min = per_node.iter().min().copied().unwrap_or(0);
    let max = per_node.iter().max().copied().unwrap_or(0);
    println!(
        "| {run} | {name} | {opened} / {asked} | {alive} | {min}–{max} | {} | {:.1} | {retried} | {} | {cpu_us:.2} | {deliveries} / {expected} | {gaps} | {resumed} ({not_recovered}) | {deliveries_per_sec:.0} | {} | {} | {:.0} |",
        spread(&idle_bytes, 0),
        subscribe_ms as f64 / 1e3,
        spread(&subscribed_bytes, 0),
        ms(p50),
        ms(p99),
        client_rss as f64 / 1024.0,
    );
    eprintln!(
        "{name} run {run}: broadcast CPU {cpu:.2} s (nodes + redis), {} of {} published, {complete_sessions} sessions got every one; per node: {per_node:?}",
        answer.published, bench.messages
    );
    let figures = Figures {
        opened: opened as f64,
        idle_bytes: med(&idle_bytes),
        subscribed_bytes: med(&subscribed_bytes),
        cpu_us,
        deliveries_per_sec,
        p50_ms: p50.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
        p99_ms: p99.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
        complete: opened == asked
            && alive == asked
            && subscribed == asked
            && total_open == asked
            && deliveries == expected
            && expected == asked as u64 * bench.messages
            && gaps == 0
            && not_recovered == 0,
    };
    for h in holds {
        h.stop().await;
    }
    for n in nodes {
        n.stop().await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(figures)
}
