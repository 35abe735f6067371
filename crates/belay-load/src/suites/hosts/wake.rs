//! The wake latency of a sleeping host: a client calls it at a random
//! phase of its heartbeat, `wakes` times, and the time to the answer is
//! compared with the bound of one heartbeat interval plus connect time.

use std::time::{Duration, Instant};

use belay_client::host::{HostBuilder, HostError};
use belay_client::Client;
use belay_proto::host::{HostTiming, IdleSleepConfig};
use serde_json::json;

/// The latencies of every wake, in call order.
#[derive(Debug, Clone)]
pub struct Wakes {
    /// The relay's heartbeat interval.
    pub interval: Duration,
    /// The relay's wake bound (interval plus connect allowance).
    pub bound: Duration,
    /// Call → answer, per wake.
    pub latencies: Vec<Duration>,
}

/// Wake a sleeping host `wakes` times with the relay beating every
/// `interval`.
pub async fn run(wakes: usize, interval: Duration) -> std::io::Result<Wakes> {
    let short = Duration::from_millis(100);
    let timing = HostTiming::default()
        .with_heartbeat_interval(interval)
        .with_grace(short);
    let (_server, relay) = super::relay::start(super::relay::config(
        timing.clone(),
        Duration::from_secs(25),
    ))
    .await?;
    let url = format!("ws://{relay}/ws");
    let host = HostBuilder::new(url.clone(), "host:sleeper")
        .sleep(IdleSleepConfig::default().with_min_awake(short))
        .interval(interval)
        .method("echo", |p| async move { Ok::<_, HostError>(p) })
        .start();
    let client = Client::builder(url)
        .host_timing(&timing)
        .connect()
        .map_err(std::io::Error::other)?;
    client.ready().await.map_err(std::io::Error::other)?;
    let mut status = host.status();
    let mut latencies = Vec::with_capacity(wakes);
    let mut phase = 0x2545_f491_4f6c_dd1d_u64;
    for n in 0..wakes {
        // Asleep again after the last call (its grace and the minimum
        // awake time past, and a beat that said so).
        let stops = n as u64;
        let asleep = status.wait_for(|s| !s.awake && s.stats.stops >= stops);
        tokio::time::timeout(interval * 10 + Duration::from_secs(5), asleep)
            .await
            .map_err(|_| std::io::Error::other("the host did not go back to sleep"))?
            .map_err(std::io::Error::other)?;
        // A random phase of the heartbeat (xorshift; reproducible).
        phase ^= phase << 13;
        phase ^= phase >> 7;
        phase ^= phase << 17;
        let millis = u64::try_from(interval.as_millis()).unwrap_or(1).max(1);
        tokio::time::sleep(Duration::from_millis(phase % millis)).await;
        let asked = Instant::now();
        client
            .call_host("sleeper", "echo", json!(n))
            .await
            .map_err(std::io::Error::other)?;
        latencies.push(asked.elapsed());
    }
    host.stop().await;
    client.close().await;
    Ok(Wakes {
        interval,
        bound: timing.wake_bound(),
        latencies,
    })
}
