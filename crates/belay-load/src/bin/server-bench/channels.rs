//! `server-bench channels`: what a subscribed channel costs, and whether
//! the memory comes back once every subscriber left.

use std::net::IpAddr;
use std::time::Duration;

use belay_load::loads::channels;
use belay_load::measure::stats::median;

use crate::server::{Kind, ServerProcess};

/// Server RSS after letting it settle for `settle`.
pub(crate) async fn settled_rss(server: &ServerProcess, settle: Duration) -> Result<u64, String> {
    tokio::time::sleep(settle).await;
    Ok(server.sample()?.rss_kib * 1024)
}

pub(crate) async fn bench_channels(
    sessions: usize,
    per_session: usize,
    rounds: usize,
    sources: &[IpAddr],
    runs: usize,
) -> Result<(), String> {
    let bound = Duration::from_secs(120);
    let settle = Duration::from_secs(2);
    let channels_per_round = sessions * per_session;
    println!(
        "| run | channels | RSS idle | RSS sessions | per channel | RSS after leaving (round 1 → {rounds}) | after closing |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut per_channel = Vec::new();
    let mut returned = Vec::new();
    for run in 1..=runs {
        let server = ServerProcess::start(Kind::Belay, 25_000)?;
        let idle = settled_rss(&server, settle).await?;
        let mut open = channels::open_sessions(&server.target, sessions, sources, bound)
            .await
            .map_err(|e| e.to_string())?;
        let with_sessions = settled_rss(&server, settle).await?;
        let mut after_rounds = Vec::new();
        let mut subscribed = 0;
        for round in 0..rounds {
            let confirmed = channels::subscribe_all(&mut open, round, per_session, bound)
                .await
                .map_err(|e| e.to_string())?;
            if confirmed != channels_per_round {
                return Err(format!("{confirmed} of {channels_per_round} confirmed"));
            }
            if round == 0 {
                subscribed = settled_rss(&server, settle).await?;
            }
            channels::unsubscribe_all(&mut open, round, per_session, bound)
                .await
                .map_err(|e| e.to_string())?;
            let held = channels::metric(&server.target, "belay_channels")
                .await
                .map_err(|e| e.to_string())?;
            if held != 0.0 {
                return Err(format!("{held} channels still held after leaving"));
            }
            after_rounds.push(settled_rss(&server, settle).await?);
        }
        drop(open);
        let closed = settled_rss(&server, Duration::from_secs(5)).await?;
        let cost = subscribed.saturating_sub(with_sessions) as f64 / channels_per_round as f64;
        per_channel.push(cost);
        let last = after_rounds.last().copied().unwrap_or(with_sessions);
        returned.push(last as f64 / with_sessions as f64);
        let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
        println!(
            "| {run} | {channels_per_round} × {rounds} | {} | {} | {cost:.0} B | {} | {} |",
            mib(idle),
            mib(with_sessions),
            after_rounds
                .iter()
                .map(|b| mib(*b))
                .collect::<Vec<_>>()
                .join(" → "),
            mib(closed),
        );
    }
    println!(
        "MEDIAN channels per_channel_bytes={:.0} rss_after_rounds_vs_sessions={:.3}",
        median(&per_channel).unwrap_or(f64::NAN),
        median(&returned).unwrap_or(f64::NAN)
    );
    Ok(())
}
