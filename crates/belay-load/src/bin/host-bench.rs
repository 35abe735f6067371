//! `host-bench`: the idle-sleep benchmarks of resident hosts
//! (docs/HOSTS.md).
//!
//! * `host-bench traffic [--scale 25 --seconds 144]`: frames and bytes per
//!   hour between an idle host and its relay, asleep vs kept awake.
//! * `host-bench wake [--wakes 100 --interval-ms 1000]`: call → answer for
//!   a sleeping host, against the wake bound.
//! * `host-bench memory [--hosts 2000]`: the relay's RSS (another process)
//!   per sleeping and per connected host.

use std::process::Stdio;
use std::time::Duration;

use belay_load::suites::hosts::{memory, relay, traffic, wake};
use clap::{Parser, Subcommand};
use tokio::io::{AsyncBufReadExt, BufReader};

#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Debug, Parser)]
#[command(about = "Idle-sleep benchmarks of resident hosts (docs/HOSTS.md)")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Frames and bytes per hour of an idle host, asleep vs awake.
    Traffic {
        /// Every timer is its default divided by this.
        #[arg(long, default_value_t = 25)]
        scale: u32,
        /// Seconds each scenario runs (standing for seconds × scale).
        #[arg(long, default_value_t = 144)]
        seconds: u64,
    },
    /// The latency of waking a sleeping host with a call.
    Wake {
        #[arg(long, default_value_t = 100)]
        wakes: usize,
        /// The relay's heartbeat interval.
        #[arg(long, default_value_t = 1_000)]
        interval_ms: u64,
    },
    /// The relay's memory per sleeping and per connected host.
    Memory {
        #[arg(long, default_value_t = 2_000)]
        hosts: usize,
    },
    /// (internal) The relay process of `memory`: prints `listening ADDR`.
    Relay,
}

fn main() -> Result<(), String> {
    let cli = Cli::parse();
    let runtime = belay_standalone::runtime::build().map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        match cli.command {
            Cmd::Traffic { scale, seconds } => {
                report_traffic(scale.clamp(1, 600), seconds.clamp(1, 3_600)).await
            }
            Cmd::Wake { wakes, interval_ms } => {
                report_wakes(
                    wakes.clamp(1, 10_000),
                    Duration::from_millis(interval_ms.max(50)),
                )
                .await
            }
            Cmd::Memory { hosts } => report_memory(hosts.clamp(1, 20_000)).await,
            Cmd::Relay => serve_relay().await,
        }
    })
}

async fn report_traffic(scale: u32, seconds: u64) -> Result<(), String> {
    let t = traffic::run(scale, seconds)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "idle host, per hour (timers ÷{scale}, {seconds} s per scenario = {} s of real time):",
        seconds * u64::from(scale)
    );
    println!("| host | TCP connections | messages (HTTP + WebSocket frames) | of which WebSocket frames | bytes (TCP payload) |");
    println!("|---|---|---|---|---|");
    for (name, p) in [
        ("asleep (heartbeat only)", t.asleep),
        ("kept awake (heartbeat + session)", t.awake),
    ] {
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} |",
            p.connections, p.messages, p.ws_frames, p.bytes
        );
    }
    println!(
        "asleep / awake: messages {:.2}x, bytes {:.2}x",
        t.asleep.messages / t.awake.messages,
        t.asleep.bytes / t.awake.bytes
    );
    Ok(())
}

async fn report_wakes(wakes: usize, interval: Duration) -> Result<(), String> {
    let w = wake::run(wakes, interval)
        .await
        .map_err(|e| e.to_string())?;
    let mut sorted = w.latencies.clone();
    sorted.sort();
    let at = |q: f64| sorted[((sorted.len() as f64 - 1.0) * q).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
    let over_interval = sorted.iter().filter(|d| **d > w.interval).count();
    let over_bound = sorted.iter().filter(|d| **d > w.bound).count();
    println!(
        "{} wakes, heartbeat interval {:.0} ms, wake bound {:.0} ms (interval + connect allowance)",
        sorted.len(),
        ms(w.interval),
        ms(w.bound)
    );
    println!("| p50 | p99 | max | min | over the interval | over the bound |");
    println!("|---|---|---|---|---|---|");
    println!(
        "| {:.0} ms | {:.0} ms | {:.0} ms | {:.0} ms | {over_interval} | {over_bound} |",
        ms(at(0.5)),
        ms(at(0.99)),
        ms(at(1.0)),
        ms(at(0.0))
    );
    Ok(())
}

async fn report_memory(hosts: usize) -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = tokio::process::Command::new(exe)
        .arg("relay")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    let pid = child.id().ok_or("no pid")?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    let line = lines
        .next_line()
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the relay said nothing")?;
    let addr = line
        .strip_prefix("listening ")
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("unexpected: {line}"))?;
    let m = memory::run(pid, addr, hosts)
        .await
        .map_err(|e| e.to_string())?;
    let _ = child.kill().await;
    let per = |bytes: u64| bytes as f64 / m.hosts as f64;
    println!(
        "relay RSS with {} hosts (another process; kernel socket buffers are not in RSS):",
        m.hosts
    );
    println!("| stage | RSS | per host |");
    println!("|---|---|---|");
    println!("| no host | {:.1} MiB | |", m.baseline as f64 / 1_048_576.0);
    println!(
        "| all asleep (a heartbeat each) | {:.1} MiB | {:.0} B |",
        m.asleep as f64 / 1_048_576.0,
        per(m.asleep.saturating_sub(m.baseline))
    );
    println!(
        "| all connected (a session each) | {:.1} MiB | {:.0} B |",
        m.connected as f64 / 1_048_576.0,
        per(m.connected.saturating_sub(m.baseline))
    );
    Ok(())
}

async fn serve_relay() -> Result<(), String> {
    let config = relay::config(
        belay_proto::host::HostTiming::default(),
        Duration::from_secs(25),
    );
    let (_server, addr) = relay::start(config).await.map_err(|e| e.to_string())?;
    println!("listening {addr}");
    std::future::pending::<()>().await;
    Ok(())
}
