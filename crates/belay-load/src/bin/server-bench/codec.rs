//! `server-bench codec`: the binary codec against JSON on the same server
//! build.

use std::time::Duration;

use belay_load::loads::broadcast::BroadcastConfig;
use belay_load::loads::echo::{self, EchoConfig};
use belay_load::measure::procfs::CLK_TCK;
use belay_proto::message::Codec;

use crate::server::{broadcast_once, Kind, ServerProcess};
use crate::summary::summary_of;

/// `server-bench codec`: JSON then binary in each run, each load on a
/// fresh Belay server.
pub(crate) async fn bench_codec(
    echo_config: &EchoConfig,
    broadcast_config: &BroadcastConfig,
    runs: usize,
) -> Result<(), String> {
    const CODECS: [(Codec, &str); 2] = [(Codec::Json, "json"), (Codec::Binary, "binary")];
    println!("| run | codec | echo req/s | echo p50 (ms) | echo p99 (ms) | CPU µs / request | deliveries / expected | broadcast p50 (ms) | broadcast p99 (ms) | CPU µs / delivery |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut figures: [[Vec<f64>; 2]; 7] = Default::default();
    for run in 1..=runs {
        for (i, (codec, name)) in CODECS.into_iter().enumerate() {
            let server = ServerProcess::start(Kind::Belay, 25_000)?;
            let before = server.sample()?;
            let config = EchoConfig {
                codec,
                ..echo_config.clone()
            };
            let mut echoed = echo::run(&server.target, &config)
                .await
                .map_err(|e| e.to_string())?;
            let after = server.sample()?;
            let echo_cpu = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK;
            drop(server);
            let server = ServerProcess::start(Kind::Belay, 25_000)?;
            let config = BroadcastConfig {
                codec,
                ..broadcast_config.clone()
            };
            let (mut broadcast, cast_cpu) = broadcast_once(&server, &config).await?;
            drop(server);
            let millis = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
            let row = [
                echoed.requests_per_sec(),
                millis(echoed.latencies.percentile(50.0)),
                millis(echoed.latencies.percentile(99.0)),
                echo_cpu * 1e6 / echoed.completed.max(1) as f64,
                millis(broadcast.latencies.percentile(50.0)),
                millis(broadcast.latencies.percentile(99.0)),
                cast_cpu * 1e6 / broadcast.deliveries.max(1) as f64,
            ];
            println!(
                "| {run} | {name} | {:.0} | {:.3} | {:.3} | {:.2} | {} / {} | {:.2} | {:.2} | {:.3} |",
                row[0], row[1], row[2], row[3], broadcast.deliveries, broadcast.expected, row[4], row[5], row[6]
            );
            for problem in [&echoed.first_error, &broadcast.first_error]
                .into_iter()
                .flatten()
            {
                eprintln!("{name}: first problem: {problem}");
            }
            for (series, value) in figures.iter_mut().zip(row) {
                series[i].push(value);
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let names = [
        "echo req/s",
        "echo p50 ms",
        "echo p99 ms",
        "echo server CPU us per request",
        "broadcast p50 ms",
        "broadcast p99 ms",
        "broadcast server CPU us per delivery",
    ];
    for (what, series) in names.into_iter().zip(&figures) {
        summary_of(what, ["json", "binary"], series);
    }
    Ok(())
}
