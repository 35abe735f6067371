//! `server-bench http-publish`: the same broadcast published with
//! `Server::publish` and through `POST /api/publish`.

use std::time::{Duration, Instant};

use belay_load::loads::broadcast::{BroadcastConfig, Publisher};
use belay_load::loads::http_publish::HttpPublisher;
use belay_load::measure::stats::ms;

use crate::server::{broadcast_once, Kind, ServerProcess};
use crate::summary::summary_of;

/// The API key of the `http-publish` bench server.
const BENCH_API_KEY: &str = "server-bench-api-key-0123456789";

pub(crate) async fn bench_http_publish(
    config: &BroadcastConfig,
    http_connections: usize,
    runs: usize,
) -> Result<(), String> {
    let publishers = [
        ("rust", Publisher::Method),
        (
            "http",
            Publisher::Http(HttpPublisher {
                key: BENCH_API_KEY.into(),
                connections: http_connections,
            }),
        ),
    ];
    println!("| publisher | run | subscribers | deliveries / expected | all arrived | deliveries/s | p50 (ms) | p99 (ms) | server CPU (s) | publish span (ms) | publish round trip p50 / p99 (ms) |");
    println!("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    let mut dps = [Vec::new(), Vec::new()];
    let mut p50 = [Vec::new(), Vec::new()];
    let mut p99 = [Vec::new(), Vec::new()];
    let mut cpu = [Vec::new(), Vec::new()];
    let mut span = [Vec::new(), Vec::new()];
    let mut complete = [0usize, 0usize];
    for run in 1..=runs {
        for (i, (name, publisher)) in publishers.iter().enumerate() {
            // The same server for both: this binary's Belay with the API mounted.
            let server = ServerProcess::start_with(Kind::Belay, 25_000, Some(BENCH_API_KEY))?;
            let started = Instant::now();
            let config = BroadcastConfig {
                publisher: publisher.clone(),
                ..config.clone()
            };
            let (mut report, cpu_s) = broadcast_once(&server, &config).await?;
            let (a, b) = (
                report.latencies.percentile(50.0),
                report.latencies.percentile(99.0),
            );
            let all = report.subscribers == config.subscribers
                && report.deliveries == report.expected
                && report.first_error.is_none();
            let round_trip = match report.http.as_mut() {
                Some(http) => format!(
                    "{} / {}",
                    ms(http.round_trips.percentile(50.0)),
                    ms(http.round_trips.percentile(99.0))
                ),
                None => "–".into(),
            };
            println!(
                "| {name} | {run} | {} | {} / {} | {} | {:.0} | {} | {} | {cpu_s:.2} | {} | {round_trip} |",
                report.subscribers,
                report.deliveries,
                report.expected,
                if all { "yes" } else { "NO" },
                report.deliveries_per_sec(),
                ms(a),
                ms(b),
                ms(report.publish_span),
            );
            if let Some(e) = &report.first_error {
                eprintln!(
                    "{name}: first problem: {e} ({:.1} s)",
                    started.elapsed().as_secs_f64()
                );
            }
            complete[i] += usize::from(all);
            dps[i].push(report.deliveries_per_sec());
            p50[i].push(a.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            p99[i].push(b.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3));
            cpu[i].push(cpu_s);
            span[i].push(
                report
                    .publish_span
                    .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
            );
            drop(server);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let names = ["rust", "http"];
    summary_of("http-publish deliveries/s", names, &dps);
    summary_of("http-publish p50 ms", names, &p50);
    summary_of("http-publish p99 ms", names, &p99);
    summary_of("http-publish server CPU s", names, &cpu);
    summary_of("http-publish publish span ms", names, &span);
    println!(
        "ALL DELIVERED http-publish: rust {}/{runs} runs, http {}/{runs} runs",
        complete[0], complete[1]
    );
    Ok(())
}
