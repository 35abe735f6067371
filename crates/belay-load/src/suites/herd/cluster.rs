//! `herd-bench --nodes K`: the outage with a cluster. K `belay serve`
//! nodes on one `redis-server` (each `--accept-rate C`), HAProxy in front
//! (TCP round-robin), the fleet connected through it. Every node is killed
//! (SIGKILL) at once, stays down, and K new ones come back on the same
//! ports. The nodes plan their reconnect slots for the cluster (their
//! control plane totals the live nodes' rates: `RedisBroker::pace_with_cluster`),
//! so the fleet should come back in about `D + N / (K × C)` with no node
//! admitting more than C per second. Each node's `belay_connects_total` is
//! read every 250 ms, so each node's busiest second is measured on the
//! server's side.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use serde_json::json;

use super::balancer::Balancer;
use super::figures::Figures;
use super::fleet::Fleet;
use super::server::{series, ServeProcess};
use super::HerdConfig;
use crate::suites::cluster::redis::RedisProcess;
use crate::LoadError;

/// How often each node's counters are read.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// What one node did after the return.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NodeFigures {
    /// Sessions it accepted in its busiest second (counted over four
    /// consecutive samples).
    pub peak_per_s: f64,
    /// Sessions it accepted in all.
    pub accepted: f64,
    /// Upgrades its admission refused (503 with Retry-After).
    pub refused: f64,
}

/// One cluster run.
#[derive(Debug, Clone)]
pub struct ClusterReport {
    /// The run's configuration (`serve.accept_rate` is each node's).
    pub config: HerdConfig,
    /// Nodes behind the balancer (K).
    pub nodes: usize,
    /// `D + N / (K × C)`.
    pub bound: Duration,
    /// The fleet's figures, as for one server.
    pub figures: Figures,
    /// Each node's, in the balancer's order.
    pub per_node: Vec<NodeFigures>,
}

/// Run the outage once with `nodes` nodes and measure it.
pub async fn run(config: &HerdConfig, nodes: usize) -> Result<ClusterReport, LoadError> {
    config.check()?;
    let n = config.clients;
    let redis = tokio::task::block_in_place(RedisProcess::start).map_err(LoadError::Target)?;
    let mut settings = config.serve.clone();
    settings.broker = Some(redis.url());
    settings.expected_clients = n.div_ceil(nodes);
    let mut servers = Vec::new();
    for _ in 0..nodes {
        servers.push(ServeProcess::start(&settings, (Ipv4Addr::LOCALHOST, 0).into()).await?);
    }
    let addrs: Vec<SocketAddr> = servers.iter().map(ServeProcess::addr).collect();
    let balancer = Balancer::start(&addrs).await?;
    let url = format!("ws://{}/ws", balancer.front());
    let mut fleet = Fleet::new();
    super::ramp(&mut fleet, &url, config).await?;
    let counts = fleet
        .wait_for(|c| c.ready >= n, Duration::from_secs(60))
        .await;
    if counts.ready < n {
        fleet.close().await;
        return Err(LoadError::Protocol(format!(
            "only {} of {n} clients were ready a minute after the ramp",
            counts.ready
        )));
    }
    // The steady fleet before the outage: long enough for the nodes'
    // heartbeats to have totalled each other's rates (a scenario
    // parameter, not a wait for anything).
    tokio::time::sleep(config.settle).await;

    let kill_at = fleet.mark_kill();
    for server in servers.drain(..) {
        server.kill().await?;
    }
    tokio::time::sleep_until((kill_at + config.down).into()).await;
    let spawned_at = Instant::now();
    for addr in &addrs {
        servers.push(ServeProcess::start(&settings, *addr).await?);
    }
    let up_at = Instant::now();
    let samples = watch(&fleet, &servers, kill_at + config.horizon).await;
    let end_at = Instant::now();
    let figures = super::measured(&fleet, kill_at, [spawned_at, up_at, end_at]);
    fleet.close().await;
    for server in servers {
        server.kill().await?;
    }
    drop(balancer);
    let rate = config.serve.accept_rate * nodes as f64;
    Ok(ClusterReport {
        config: config.clone(),
        nodes,
        bound: config.down + Duration::from_secs_f64(n as f64 / rate),
        figures,
        per_node: per_node(&samples),
    })
}

/// Each node's `(accepted, refused)` read every [`SAMPLE_EVERY`] until
/// every client is ready again or `deadline`, and once more at the end.
async fn watch(fleet: &Fleet, servers: &[ServeProcess], deadline: Instant) -> Vec<Vec<(f64, f64)>> {
    let mut samples: Vec<Vec<(f64, f64)>> = vec![Vec::new(); servers.len()];
    loop {
        sample(servers, &mut samples).await;
        let now = Instant::now();
        if now >= deadline {
            return samples;
        }
        let counts = fleet
            .wait_for(
                |c| c.ready_since_kill >= fleet.len(),
                SAMPLE_EVERY.min(deadline - now),
            )
            .await;
        if counts.ready_since_kill >= fleet.len() {
            sample(servers, &mut samples).await;
            return samples;
        }
    }
}

/// Read every node's counters once (a node that does not answer keeps its
/// last figures).
async fn sample(servers: &[ServeProcess], samples: &mut [Vec<(f64, f64)>]) {
    for (server, kept) in servers.iter().zip(samples.iter_mut()) {
        let text = server.scrape("/metrics", SAMPLE_EVERY).await.ok();
        let get = |name| text.as_deref().and_then(|t| series(t, name));
        let last = kept.last().copied().unwrap_or_default();
        kept.push((
            get("belay_connects_total").unwrap_or(last.0),
            get("belay_admission_refusals_total").unwrap_or(last.1),
        ));
    }
}

fn per_node(samples: &[Vec<(f64, f64)>]) -> Vec<NodeFigures> {
    let window = (Duration::from_secs(1).as_millis() / SAMPLE_EVERY.as_millis()) as usize;
    samples
        .iter()
        .map(|kept| {
            let peak = kept
                .iter()
                .zip(kept.iter().skip(window))
                .map(|(from, to)| to.0 - from.0)
                .fold(0.0, f64::max);
            let last = kept.last().copied().unwrap_or_default();
            NodeFigures {
                peak_per_s: peak,
                accepted: last.0,
                refused: last.1,
            }
        })
        .collect()
}

impl ClusterReport {
    /// One JSON object.
    pub fn to_json(&self) -> String {
        json!({
            "policy": self.config.policy,
            "clients": self.config.clients,
            "nodes": self.nodes,
            "accept_rate_per_node": self.config.serve.accept_rate,
            "down_s": self.config.down.as_secs_f64(),
            "bound_s": self.bound.as_secs_f64(),
            "all_connected_s": self.figures.t100.map(|t| t.as_secs_f64()),
            "peak_attempts_after_return": self.figures.peak_after_return,
            "per_node": self.per_node.iter().map(|n| json!({
                "peak_accepted_per_s": n.peak_per_s,
                "accepted": n.accepted,
                "refused": n.refused,
            })).collect::<Vec<_>>(),
        })
        .to_string()
    }
}

/// A Markdown table over cluster runs.
pub fn table(reports: &[ClusterReport]) -> String {
    let mut out = String::from(
        "| policy | clients | nodes × rate | all connected / bound | peak attempts/s after return | busiest node's peak accepted/s / its rate | refused (all nodes) |\n|---|--:|--:|--:|--:|--:|--:|\n",
    );
    for r in reports {
        let rate = r.config.serve.accept_rate;
        let busiest = r.per_node.iter().map(|n| n.peak_per_s).fold(0.0, f64::max);
        let refused: f64 = r.per_node.iter().map(|n| n.refused).sum();
        let all = match r.figures.t100 {
            Some(t) => format!(
                "{:.1} s / {:.1} s ({:.3})",
                t.as_secs_f64(),
                r.bound.as_secs_f64(),
                t.as_secs_f64() / r.bound.as_secs_f64()
            ),
            None => format!("never / {:.1} s", r.bound.as_secs_f64()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} × {rate:.0}/s | {all} | {} | {busiest:.0} / {rate:.0} ({:.2}) | {refused:.0} |",
            r.config.policy,
            r.config.clients,
            r.nodes,
            r.figures.peak_after_return,
            busiest / rate
        );
    }
    out
}
