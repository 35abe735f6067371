//! `server-bench sse`: the SSE fallback against WebSocket on the same
//! server build.

use std::net::IpAddr;
use std::time::Duration;

use belay_load::loads::idle::{self, IdleConfig};
use belay_load::loads::sse_compare;

use crate::server::{Kind, ServerProcess};
use crate::summary::summary_of;

/// What `server-bench sse` measures.
pub(crate) struct SseBench {
    pub(crate) connections: usize,
    pub(crate) hold: Duration,
    pub(crate) subscribers: usize,
    pub(crate) messages: u64,
    pub(crate) rate: f64,
    pub(crate) requests: usize,
}

pub(crate) async fn bench_sse(
    bench: SseBench,
    sources: &[IpAddr],
    runs: usize,
) -> Result<(), String> {
    println!("| run | transport | idle sessions alive | idle B/session | broadcast p50 (ms) | broadcast p99 (ms) | deliveries missing | request p50 (ms) | request p99 (ms) |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|");
    let names = ["websocket", "sse"];
    let mut idle: [Vec<f64>; 2] = Default::default();
    let mut p50: [Vec<f64>; 2] = Default::default();
    let mut p99: [Vec<f64>; 2] = Default::default();
    let mut rtt50: [Vec<f64>; 2] = Default::default();
    let mut rtt99: [Vec<f64>; 2] = Default::default();
    let millis = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    for run in 1..=runs {
        // Idle: each transport on a fresh server.
        let mut held = [(0usize, 0.0f64); 2];
        for (i, slot) in held.iter_mut().enumerate() {
            let server = ServerProcess::start(Kind::Belay, 10_000)?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let base = server.sample()?.rss_kib;
            let mut config = IdleConfig::new(bench.connections, sources.to_vec());
            config.sse = i == 1;
            let fleet = idle::open(&server.target, &config).await;
            if let Some(e) = &fleet.first_error {
                eprintln!("{} idle: first failure: {e}", names[i]);
            }
            tokio::time::sleep(bench.hold).await;
            let alive = fleet.alive();
            *slot = (
                alive,
                server.sample()?.rss_kib.saturating_sub(base) as f64 * 1024.0,
            );
            fleet.close().await;
            idle[i].push(slot.1 / alive.max(1) as f64);
        }
        // Broadcast to both at once, then round trips, on one server.
        let server = ServerProcess::start(Kind::Belay, 25_000)?;
        let (mut ws, mut sse, missing) = sse_compare::broadcast_both(
            &server.target,
            bench.subscribers,
            bench.messages,
            bench.rate,
            sources,
        )
        .await
        .map_err(|e| e.to_string())?;
        let (mut ws_rtt, mut sse_rtt) = sse_compare::echo_both(&server.target, bench.requests)
            .await
            .map_err(|e| e.to_string())?;
        drop(server);
        for (i, (lat, rtt)) in [(&mut ws, &mut ws_rtt), (&mut sse, &mut sse_rtt)]
            .into_iter()
            .enumerate()
        {
            let (a, b) = (millis(lat.percentile(50.0)), millis(lat.percentile(99.0)));
            let (c, d) = (millis(rtt.percentile(50.0)), millis(rtt.percentile(99.0)));
            p50[i].push(a);
            p99[i].push(b);
            rtt50[i].push(c);
            rtt99[i].push(d);
            println!(
                "| {run} | {} | {} | {:.0} | {a:.2} | {b:.2} | {} | {c:.3} | {d:.3} |",
                names[i],
                held[i].0,
                held[i].1 / held[i].0.max(1) as f64,
                if i == 1 {
                    missing.to_string()
                } else {
                    "(both)".into()
                },
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    summary_of("sse: idle bytes per session", names, &idle);
    summary_of("sse: broadcast p50 ms", names, &p50);
    summary_of("sse: broadcast p99 ms", names, &p99);
    summary_of("sse: request round trip p50 ms", names, &rtt50);
    summary_of("sse: request round trip p99 ms", names, &rtt99);
    Ok(())
}
