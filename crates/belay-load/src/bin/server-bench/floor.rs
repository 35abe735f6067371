//! Belay against the floor (or the baseline build) under the idle, echo
//! and broadcast loads, servers interleaved within every run.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use belay_load::loads::broadcast::{self, BroadcastConfig};
use belay_load::loads::echo::{self, EchoConfig};
use belay_load::loads::idle::{self, IdleConfig};
use belay_load::measure::procfs::CLK_TCK;
use belay_load::measure::stats::ms;

use crate::server::{kinds, ServerProcess};
use crate::summary::summary;

pub(crate) async fn bench_idle(
    counts: &[usize],
    hold: Duration,
    sources: &[IpAddr],
    ping_interval_ms: u64,
    runs: usize,
) -> Result<(), String> {
    println!("| server | connections | opened | open time (s) | RSS (MiB) | bytes/conn | CPU over hold (s) | CPU µs per conn·s |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for &n in counts {
        let mut per_conn = [Vec::new(), Vec::new()];
        let mut cpu = [Vec::new(), Vec::new()];
        for _ in 0..runs {
            for (i, (kind, name)) in kinds().into_iter().enumerate() {
                let server = ServerProcess::start(kind, ping_interval_ms)?;
                tokio::time::sleep(Duration::from_millis(300)).await;
                let base = server.sample()?;
                let fleet = idle::open(&server.target, &IdleConfig::new(n, sources.to_vec())).await;
                // Let handshakes settle before the hold starts.
                tokio::time::sleep(Duration::from_secs(2)).await;
                let before = server.sample()?;
                tokio::time::sleep(hold).await;
                let after = server.sample()?;
                let alive = fleet.alive();
                let rss_delta = after.rss_kib.saturating_sub(base.rss_kib) as f64 * 1024.0;
                let bytes = rss_delta / alive.max(1) as f64;
                let cpu_s = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK;
                let cpu_us = cpu_s * 1e6 / (alive.max(1) as f64 * hold.as_secs_f64());
                println!(
                    "| {name} | {n} | {} (alive {alive}, failed {}) | {:.2} | {:.1} | {:.0} | {:.2} | {:.3} |",
                    fleet.opened,
                    fleet.failed,
                    fleet.open_time.as_secs_f64(),
                    after.rss_kib as f64 / 1024.0,
                    bytes,
                    cpu_s,
                    cpu_us
                );
                if let Some(e) = &fleet.first_error {
                    eprintln!("{name} n={n}: first failure: {e}");
                }
                per_conn[i].push(bytes);
                cpu[i].push(cpu_us);
                fleet.close().await;
                drop(server);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
        summary(&format!("idle {n}: bytes/conn"), &per_conn);
        summary(&format!("idle {n}: CPU µs per conn·s"), &cpu);
    }
    Ok(())
}

pub(crate) async fn bench_echo(
    connections: usize,
    requests: usize,
    runs: usize,
) -> Result<(), String> {
    println!("| server | run | completed | failed | req/s | p50 (ms) | p99 (ms) |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let mut rps = [Vec::new(), Vec::new()];
    let mut p50 = [Vec::new(), Vec::new()];
    let mut p99 = [Vec::new(), Vec::new()];
    for run in 1..=runs {
        for (i, (kind, name)) in kinds().into_iter().enumerate() {
            let server = ServerProcess::start(kind, 25_000)?;
            let mut report = echo::run(&server.target, &EchoConfig::new(connections, requests))
                .await
                .map_err(|e| e.to_string())?;
            let (a, b) = (
                report.latencies.percentile(50.0),
                report.latencies.percentile(99.0),
            );
            println!(
                "| {name} | {run} | {} | {} | {:.0} | {} | {} |",
                report.completed,
                report.failed,
                report.requests_per_sec(),
                ms(a),
                ms(b)
            );
            if let Some(e) = &report.first_error {
                eprintln!("{name}: first failure: {e}");
            }
            rps[i].push(report.requests_per_sec());
            p50[i].push(a.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            p99[i].push(b.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
        }
    }
    summary("echo req/s", &rps);
    summary("echo p50 ms", &p50);
    summary("echo p99 ms", &p99);
    Ok(())
}

pub(crate) async fn bench_broadcast(config: &BroadcastConfig, runs: usize) -> Result<(), String> {
    println!("| server | run | subscribers | deliveries / expected | deliveries/s | p50 (ms) | p99 (ms) | server CPU (s) |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut dps = [Vec::new(), Vec::new()];
    let mut p50 = [Vec::new(), Vec::new()];
    let mut p99 = [Vec::new(), Vec::new()];
    for run in 1..=runs {
        for (i, (kind, name)) in kinds().into_iter().enumerate() {
            let server = ServerProcess::start(kind, 25_000)?;
            let started = Instant::now();
            let before = server.sample()?;
            let mut report = broadcast::run(&server.target, config)
                .await
                .map_err(|e| e.to_string())?;
            let after = server.sample()?;
            let (a, b) = (
                report.latencies.percentile(50.0),
                report.latencies.percentile(99.0),
            );
            println!(
                "| {name} | {run} | {} | {} / {} | {:.0} | {} | {} | {:.2} |",
                report.subscribers,
                report.deliveries,
                report.expected,
                report.deliveries_per_sec(),
                ms(a),
                ms(b),
                after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK
            );
            if let Some(e) = &report.first_error {
                eprintln!(
                    "{name}: first problem: {e} ({:.1} s)",
                    started.elapsed().as_secs_f64()
                );
            }
            dps[i].push(report.deliveries_per_sec());
            p50[i].push(a.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            p99[i].push(b.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            drop(server);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    summary("broadcast deliveries/s", &dps);
    summary("broadcast p50 ms", &p50);
    summary("broadcast p99 ms", &p99);
    Ok(())
}
