//! What the liveness defaults cost, against the earlier ones, in the same
//! run: idle sessions held on a Belay server pinging at each interval,
//! servers interleaved within every run. Per connection and hour: the
//! server's CPU, and the frames and bytes each way (what wakes a mobile
//! radio), counted by the sessions (payload and WebSocket header). The
//! bound on noticing a silent death follows from the settings: the server
//! reaps a silent client within ping + pong timeout; a client with the
//! default config gives up on a silent server after two ping intervals, or
//! after its own probe (at `max(probe_interval, 1.5 × ping)` of quiet)
//! goes unanswered for `probe_timeout`, whichever is sooner
//! (spec/PROTOCOL.md §3.3).

use std::net::IpAddr;
use std::time::Duration;

use belay_load::loads::idle::{self, IdleConfig};
use belay_load::measure::procfs::CLK_TCK;
use belay_proto::server::Limits;
use belay_proto::Config;

use crate::server::{Kind, ServerProcess};
use crate::summary::summary_of;

/// The defaults before issue 43: ping every 25 s, reaped 10 s after.
const BEFORE: (Duration, Duration) = (Duration::from_secs(25), Duration::from_secs(10));

/// Seconds in an hour.
const HOUR: f64 = 3_600.0;

pub(crate) async fn bench_liveness(
    connections: usize,
    hold: Duration,
    sources: &[IpAddr],
    runs: usize,
) -> Result<(), String> {
    let now = Limits::default();
    let client = Config::default();
    let settings = [
        ("ping 25 s (before)", BEFORE.0, BEFORE.1),
        (
            "ping at the default",
            now.ping_interval(),
            now.pong_timeout(),
        ),
    ];
    for (name, ping, pong) in settings {
        let probed = client.probe_interval().max(ping.mul_f64(1.5)) + client.probe_timeout();
        println!(
            "{name}: ping every {} s, reaped {} s after: a silent client is noticed within {} s, a silent server within {} s",
            ping.as_secs_f64(),
            pong.as_secs_f64(),
            (ping + pong).as_secs_f64(),
            probed.min(ping * 2).as_secs_f64(),
        );
    }
    println!("| setting | run | alive | CPU µs per conn·h | frames down per conn·h | frames up per conn·h | bytes down per conn·h | bytes up per conn·h |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut figures: [[Vec<f64>; 2]; 5] = Default::default();
    for run in 1..=runs {
        for (i, (name, ping, _)) in settings.iter().enumerate() {
            let ping_ms = u64::try_from(ping.as_millis()).unwrap_or(u64::MAX);
            let server = ServerProcess::start(Kind::Belay, ping_ms)?;
            tokio::time::sleep(Duration::from_millis(300)).await;
            let fleet = idle::open(
                &server.target,
                &IdleConfig::new(connections, sources.to_vec()),
            )
            .await;
            // Let handshakes settle before the hold starts.
            tokio::time::sleep(Duration::from_secs(2)).await;
            let (before, traffic_before) = (server.sample()?, fleet.traffic());
            tokio::time::sleep(hold).await;
            let (after, traffic) = (server.sample()?, fleet.traffic().since(traffic_before));
            let alive = fleet.alive().max(1) as f64;
            let per_hour = |count: u64| count as f64 / alive / hold.as_secs_f64() * HOUR;
            let cpu_s = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK;
            let row = [
                cpu_s * 1e6 / alive / hold.as_secs_f64() * HOUR,
                per_hour(traffic.frames_down),
                per_hour(traffic.frames_up),
                per_hour(traffic.bytes_down),
                per_hour(traffic.bytes_up),
            ];
            println!(
                "| {name} | {run} | {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} |",
                fleet.alive(),
                row[0],
                row[1],
                row[2],
                row[3],
                row[4]
            );
            if let Some(e) = &fleet.first_error {
                eprintln!("{name}: first failure: {e}");
            }
            for (figure, value) in figures.iter_mut().zip(row) {
                figure[i].push(value);
            }
            fleet.close().await;
            drop(server);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let names = [settings[0].0, settings[1].0];
    for (what, values) in [
        "liveness: server CPU µs per conn·h",
        "liveness: frames down per conn·h",
        "liveness: frames up per conn·h",
        "liveness: bytes down per conn·h",
        "liveness: bytes up per conn·h",
    ]
    .into_iter()
    .zip(&figures)
    {
        summary_of(what, names, values);
    }
    Ok(())
}
