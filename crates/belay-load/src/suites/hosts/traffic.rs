//! Frames and bytes per hour of an idle host, asleep and awake, on the
//! wire between the host and the relay (through [`super::wire_count`]),
//! the control-plane heartbeat counted on both sides.
//!
//! Time is compressed by `scale`: every timer of the run (the relay's host
//! heartbeat interval, the server's ping interval and pong timeout, the
//! session's probe interval and timeout) is the default divided by
//! `scale`, so a run of `seconds` stands for `seconds × scale` of real
//! time. What one heartbeat or one probe costs on the wire does not depend
//! on its timer, so the per-hour figures are the counted ones times
//! `3600 / (seconds × scale)`.

use std::time::Duration;

use belay_client::host::{HostBuilder, HostError};
use belay_proto::host::{HostTiming, IdleSleepConfig};
use belay_proto::Config;

use super::wire_count::{self, Totals};

/// One scenario's figures, per hour of real time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PerHour {
    /// TCP connections opened per hour.
    pub connections: f64,
    /// HTTP messages plus WebSocket frames per hour.
    pub messages: f64,
    /// Of which WebSocket frames.
    pub ws_frames: f64,
    /// TCP payload bytes both ways per hour.
    pub bytes: f64,
}

/// Both scenarios.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    /// The host nobody needs: asleep, beating only.
    pub asleep: PerHour,
    /// The same host kept awake (a client watches its channel): its
    /// session's heartbeat plus the control-plane heartbeat.
    pub awake: PerHour,
}

/// The default timings divided by `scale`.
struct Scaled {
    timing: HostTiming,
    ping_interval: Duration,
    pong_timeout: Duration,
    probe_interval: Duration,
    probe_timeout: Duration,
}

fn scaled(scale: u32) -> Scaled {
    let defaults = HostTiming::default();
    let limits = belay_proto::server::Limits::default();
    let client = Config::default();
    let div = |d: Duration| d / scale.max(1);
    Scaled {
        timing: HostTiming::default()
            .with_heartbeat_interval(div(defaults.heartbeat_interval))
            .with_grace(div(defaults.grace)),
        ping_interval: div(limits.ping_interval()),
        pong_timeout: div(limits.pong_timeout()),
        probe_interval: div(client.probe_interval()),
        probe_timeout: div(client.probe_timeout()),
    }
}

/// Measure both scenarios for `seconds` each at `scale`. A scale that
/// would push the server's ping interval under its floor
/// ([`MIN_PING_INTERVAL`](belay_proto::server::MIN_PING_INTERVAL), 1 s:
/// the pings would come less often than the compressed time says) is
/// refused: at most 25 with the default 25 s.
pub async fn run(scale: u32, seconds: u64) -> std::io::Result<Traffic> {
    let ping = belay_proto::server::Limits::default().ping_interval();
    if ping / scale.max(1) < belay_proto::server::MIN_PING_INTERVAL {
        return Err(std::io::Error::other(format!(
            "scale {scale} puts the {ping:?} server ping under its 1 s floor; use at most {}",
            ping.as_secs()
        )));
    }
    let asleep = scenario(scale, seconds, false).await?;
    let awake = scenario(scale, seconds, true).await?;
    Ok(Traffic { asleep, awake })
}

async fn scenario(scale: u32, seconds: u64, kept_awake: bool) -> std::io::Result<PerHour> {
    let s = scaled(scale);
    let mut config = super::relay::config(s.timing.clone(), s.ping_interval);
    config.limits.set_pong_timeout(s.pong_timeout);
    let (_server, relay) = super::relay::start(config).await?;
    let (proxy, counts) = wire_count::start(relay).await?;
    let (probe_interval, probe_timeout) = (s.probe_interval, s.probe_timeout);
    let host = HostBuilder::new(format!("ws://{proxy}/ws"), "host:idle")
        .sleep(IdleSleepConfig::default().with_min_awake(s.timing.heartbeat_interval * 4))
        .interval(s.timing.heartbeat_interval)
        .method("echo", |p| async move { Ok::<_, HostError>(p) })
        .session(move |b| {
            b.configure(move |c| {
                c.set_probe_interval(probe_interval);
                c.set_probe_timeout(probe_timeout);
            })
        })
        .start();
    // The watcher talks to the relay directly: its traffic is not counted.
    let watcher = belay_client::Client::builder(format!("ws://{relay}/ws"))
        .connect()
        .map_err(std::io::Error::other)?;
    let _watching = if kept_awake {
        Some(
            watcher
                .subscribe("$host:idle")
                .await
                .map_err(std::io::Error::other)?,
        )
    } else {
        None
    };
    let mut status = host.status();
    let settled = status.wait_for(|st| st.stats.beats >= 3 && st.awake == kept_awake);
    tokio::time::timeout(Duration::from_secs(30), settled)
        .await
        .map_err(|_| std::io::Error::other("the host did not settle"))?
        .map_err(std::io::Error::other)?;
    // Steady state from here: the wake (or the first beats) is not counted.
    let start: Totals = counts.totals();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let counted = counts.totals().since(start);
    let still = host.status().borrow().awake;
    host.stop().await;
    watcher.close().await;
    if still != kept_awake {
        return Err(std::io::Error::other(
            "the host changed state during the run",
        ));
    }
    let per_hour = 3_600.0 / (seconds as f64 * f64::from(scale.max(1)));
    Ok(PerHour {
        connections: counted.connections as f64 * per_hour,
        messages: counted.messages as f64 * per_hour,
        ws_frames: counted.ws_frames as f64 * per_hour,
        bytes: counted.bytes as f64 * per_hour,
    })
}
