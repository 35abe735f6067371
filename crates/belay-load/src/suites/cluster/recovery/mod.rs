//! Recovery cost: clients subscribed on node A, A killed with SIGKILL, the
//! time until every one of them is connected to node B, resubscribed with
//! `recovered: true`, and caught up with what B published meanwhile.
//!
//! Two nodes share a redis-server. Every client is a belay-client `Client`
//! (the core's `Session`) that knows both nodes' URLs (A first): after the
//! loss it dials B at a uniformly random instant of the reconnect window
//! (then every 100 ms while dials fail), and the core resubscribes from its
//! last position. Node B publishes stamped messages at a steady rate for
//! the whole run. A client is **caught up** once it holds every publication
//! made before its session reached B (`welcome`, after which the core sends
//! the resubscribe): the moment the last of those arrived (or the
//! `subscribed`, if it came later), known once a publication stamped after
//! that arrives. Every client checks that offsets follow one another to the
//! end (the last offset B published): a gap is a lost publication.
//!
//! The baseline, in the same run, is the cold start: the same clients
//! opening and subscribing on A from nothing, with the same number of
//! sessions between dial and `subscribed` at once.
//!
//! The files: `client` (one client and what it records) and this one (the
//! runs and their figures).

use std::fmt::Write as _;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

use super::node::NodeProcess;
use super::redis::RedisProcess;
use super::subscribers::{self, PublishRequest};
use super::{med, spread};
use crate::clients::websocket::{self, wall_micros};

mod client;

use client::{Client, Outcome, Progress};

/// What to run.
#[derive(Debug, Clone)]
pub struct RecoveryBench {
    /// Fleet sizes on node A (each one its own set of runs).
    pub clients: Vec<usize>,
    /// First-dial windows after the loss (0: at once), each its own set.
    pub reconnect_windows: Vec<Duration>,
    /// Runs of each combination.
    pub runs: usize,
    /// Node B's publications per second, all along (each its own set).
    pub rates: Vec<f64>,
    /// Seconds B publishes in all (bounded so history covers the outage:
    /// the Redis broker keeps 1,000 publications per channel).
    pub publish_secs: f64,
    /// Longest wait, from the kill, for every client to catch up; past it
    /// the run is reported as not recovered, with what was reached.
    pub bound: Duration,
    /// Handshakes in flight at once, shared by the clients.
    pub handshakes: usize,
    /// Source addresses.
    pub sources: Vec<IpAddr>,
    /// The nodes' ping interval.
    pub ping_interval: Duration,
}

/// Wait, polling every 10 ms, until `counter` reaches `want` or `bound`
/// passes; the time it took, if it did.
async fn wait_for(counter: &AtomicUsize, want: usize, bound: Duration) -> Option<Duration> {
    let start = Instant::now();
    while start.elapsed() < bound {
        if counter.load(Ordering::Relaxed) >= want {
            return Some(start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    None
}

#[derive(Debug, Default, Clone)]
struct Figures {
    cold: f64,
    reconnected: f64,
    resubscribed: f64,
    caught_up: f64,
    caught_up_p50: f64,
    caught_up_p99: f64,
    caught_up_count: usize,
    complete: bool,
}

/// Seconds from `from` (µs) to the `p`-th percentile (nearest rank) of
/// `at` counted over `n` clients: NaN when fewer than that rank got there.
fn percentile_secs(at: &mut [u64], n: usize, from: u64, p: f64) -> f64 {
    at.sort_unstable();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    match at.get(rank.clamp(1, n.max(1)) - 1) {
        Some(t) => t.saturating_sub(from) as f64 / 1e6,
        None => f64::NAN,
    }
}

fn secs(v: f64) -> String {
    if v.is_nan() {
        "not reached".into()
    } else {
        format!("{v:.3}")
    }
}

/// Run the benchmark; markdown rows and `MEDIAN` lines on stdout.
pub async fn run(bench: &RecoveryBench) -> Result<(), String> {
    let redis = RedisProcess::start()?;
    println!("redis-server {} (pid {})", redis.url(), redis.pid());
    println!();
    println!("| run | B publishes (/s) | clients | first dial within (ms) | cold: all subscribed on A (s) | after kill -9 of A: all connected to B (s) | all resubscribed (s) | all caught up (s) | caught up p50 / p99 (s) | caught up ÷ cold | recovered: true | replayed per client (median) | lost (gaps) | duplicates | clients at B's last offset | dials that failed | subscribes refused (retried) |");
    println!(
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut out = String::new();
    for &rate in &bench.rates {
        for &n in &bench.clients {
            for &window in &bench.reconnect_windows {
                let mut all = Vec::new();
                for run in 1..=bench.runs {
                    all.push(run_once(bench, &redis, run, n, window, rate).await?);
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
                let pick = |f: fn(&Figures) -> f64| all.iter().map(f).collect::<Vec<f64>>();
                let cold = pick(|f| f.cold);
                let caught = pick(|f| f.caught_up);
                let complete = all.iter().filter(|f| f.complete).count();
                let caught_counts: Vec<f64> =
                    all.iter().map(|f| f.caught_up_count as f64).collect();
                let _ = writeln!(
                out,
                "MEDIAN recovery, {n} clients, B publishing {rate}/s, first dial within {} ms: cold start {} s; after kill -9: all connected {} s, all resubscribed {} s, all caught up {} s ({:.2}x cold start); caught up p50 {} s, p99 {} s; caught up before the run ended (bound {} s after the kill, then 30 s after the last publication): {} of {n}; complete (every client recovered: true, 0 lost, at the last offset) in {complete} of {} runs",
                window.as_millis(),
                spread(&cold, 3),
                spread(&pick(|f| f.reconnected), 3),
                spread(&pick(|f| f.resubscribed), 3),
                if complete == all.len() { spread(&caught, 3) } else { format!("{} (runs that did not get there: {})", spread(&caught, 3), all.len() - complete) },
                med(&caught) / med(&cold),
                spread(&pick(|f| f.caught_up_p50), 3),
                spread(&pick(|f| f.caught_up_p99), 3),
                bench.bound.as_secs(),
                spread(&caught_counts, 0),
                all.len()
            );
            }
        }
    }
    println!();
    print!("{out}");
    Ok(())
}

async fn run_once(
    bench: &RecoveryBench,
    redis: &RedisProcess,
    run: usize,
    n: usize,
    window: Duration,
    rate: f64,
) -> Result<Figures, String> {
    let mut a = NodeProcess::start(&redis.url(), None, bench.ping_interval).await?;
    let b = NodeProcess::start(&redis.url(), None, bench.ping_interval).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let channel = format!("rec.r{run}.{}", wall_micros());
    let progress = Arc::new(Progress::default());
    let permits = Arc::new(Semaphore::new(bench.handshakes.max(1)));
    let (top_tx, top_rx) = watch::channel(None);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(600);
    let urls = vec![a.private.clone(), b.private.clone()];
    let mut tasks = JoinSet::new();
    let mut slots = Vec::with_capacity(n);
    let cold_start = Instant::now();
    for i in 0..n {
        let shared = Arc::new(std::sync::Mutex::new(Outcome::default()));
        slots.push(Arc::clone(&shared));
        let c = Client {
            urls: urls.clone(),
            source: websocket::source_for(&bench.sources, i),
            permits: Arc::clone(&permits),
            channel: channel.clone(),
            progress: Arc::clone(&progress),
            top: top_rx.clone(),
            deadline,
            seed: 0x9e37_79b9_7f4a_7c15 ^ ((run as u64) << 32 | (i as u64 + 1)),
            reconnect_window: window,
            probe_interval: bench.ping_interval * 2,
            shared,
        };
        tasks.spawn(c.run());
    }
    let cold = wait_for(&progress.subscribed, n, Duration::from_secs(120))
        .await
        .map(|_| cold_start.elapsed())
        .ok_or_else(|| {
            format!(
                "only {} of {n} clients subscribed on A within 120 s",
                progress.subscribed.load(Ordering::Relaxed),
            )
        })?;
    // B publishes all along.
    let request = PublishRequest {
        channel: channel.clone(),
        messages: (rate * bench.publish_secs).ceil() as u64,
        rate,
        concurrency: 1,
        channels: 1,
    };
    let publisher_target = b.private.clone();
    let publisher_source = websocket::source_for(&bench.sources, n);
    let publisher = tokio::spawn(async move {
        subscribers::publish(
            &publisher_target,
            publisher_source,
            &request,
            Duration::from_secs(600),
        )
        .await
    });
    wait_for(&progress.first_publication, n, Duration::from_secs(60))
        .await
        .ok_or("not every client got a publication on A within 60 s")?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let killed_at = wall_micros();
    a.kill9().await?;
    if wait_for(&progress.caught_up, n, bench.bound)
        .await
        .is_none()
    {
        eprintln!(
            "run {run}, {n} clients: only {} caught up within {} s of the kill",
            progress.caught_up.load(Ordering::Relaxed),
            bench.bound.as_secs()
        );
    }
    let answer = publisher
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let _ = top_tx.send(Some(answer.last_offset));
    let finished = tokio::time::timeout(Duration::from_secs(30), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    if finished.is_err() {
        eprintln!(
            "run {run}, {n} clients: {} clients still running 30 s after B's last publication: stopped",
            tasks.len()
        );
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
    }
    b.stop().await;
    drop(a);
    let outcomes: Vec<Outcome> = slots
        .iter()
        .map(|s| s.lock().map(|o| o.clone()).unwrap_or_default())
        .collect();
    let mut reconnected: Vec<u64> = outcomes.iter().filter_map(|o| o.reconnected_at).collect();
    let mut resubscribed: Vec<u64> = outcomes.iter().filter_map(|o| o.resubscribed_at).collect();
    let mut caught_up: Vec<u64> = outcomes.iter().filter_map(|o| o.caught_up_at).collect();
    let recovered = outcomes
        .iter()
        .filter(|o| o.recovered == Some(true))
        .count();
    let gaps: u64 = outcomes.iter().map(|o| o.gaps).sum();
    let duplicates: u64 = outcomes.iter().map(|o| o.duplicates).sum();
    let at_top = outcomes
        .iter()
        .filter(|o| o.last_offset == answer.last_offset)
        .count();
    let attempts: u32 = outcomes.iter().map(|o| o.attempts).sum();
    let refusals: u32 = outcomes.iter().map(|o| o.refusals).sum();
    let replayed: Vec<f64> = outcomes.iter().map(|o| o.replayed as f64).collect();
    let figures = Figures {
        cold: cold.as_secs_f64(),
        reconnected: percentile_secs(&mut reconnected, n, killed_at, 100.0),
        resubscribed: percentile_secs(&mut resubscribed, n, killed_at, 100.0),
        caught_up: percentile_secs(&mut caught_up, n, killed_at, 100.0),
        caught_up_p50: percentile_secs(&mut caught_up, n, killed_at, 50.0),
        caught_up_p99: percentile_secs(&mut caught_up, n, killed_at, 99.0),
        caught_up_count: caught_up.len(),
        complete: recovered == n && caught_up.len() == n && gaps == 0 && at_top == n,
    };
    println!(
        "| {run} | {rate} | {n} | {} | {:.3} | {} | {} | {} | {} / {} | {:.2} | {recovered} / {n} | {} | {gaps} | {duplicates} | {at_top} / {n} | {attempts} | {refusals} |",
        window.as_millis(),
        figures.cold,
        secs(figures.reconnected),
        secs(figures.resubscribed),
        secs(figures.caught_up),
        secs(figures.caught_up_p50),
        secs(figures.caught_up_p99),
        figures.caught_up / figures.cold,
        med(&replayed),
    );
    if let Some(e) = outcomes.iter().find_map(|o| o.error.clone()) {
        eprintln!("run {run}, {n} clients: first client problem: {e}");
    }
    if let Some(e) = outcomes.iter().find_map(|o| o.first_refusal.clone()) {
        eprintln!("run {run}, {n} clients: first refusal: {e}");
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_from_an_instant() {
        let mut at = vec![3_000_000, 1_000_000, 2_000_000];
        assert_eq!(percentile_secs(&mut at, 3, 1_000_000, 100.0), 2.0);
        assert_eq!(percentile_secs(&mut at, 3, 1_000_000, 50.0), 1.0);
        // Of 4 clients only 3 got there: no maximum, but a median.
        assert!(percentile_secs(&mut at, 4, 1_000_000, 100.0).is_nan());
        assert_eq!(percentile_secs(&mut at, 4, 1_000_000, 50.0), 1.0);
        assert!(percentile_secs(&mut [], 0, 0, 50.0).is_nan());
    }
}
