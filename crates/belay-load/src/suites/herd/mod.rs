//! `herd-bench`: the simulator's outage with real processes. A fleet of real
//! clients (belay-client, each running the core's `Session` with a chosen
//! reconnect policy) is connected to `belay serve`, the server is killed
//! (SIGKILL: an unplanned outage), stays down, and a fresh `belay serve`
//! comes back on the same port; the run measures how the fleet gets back.
//!
//! ```text
//!  ramp: N clients at R/s ─▶ all ready ─▶ settle ─▶ SIGKILL (t = 0) ─▶ down D ─▶ new server (t ≈ D)
//!                                                                        │
//!           dials (token provider), readiness (status), server CPU (/proc) ◀─┘ until all ready or t = H
//! ```
//!
//! Both servers run with the same flags: `--accept-rate C`,
//! `--expected-clients N`, `--worker-threads`, `--handshake-cost-us` (CPU
//! burnt for every upgrade request, refused ones too) and the per-source
//! bounds lifted (every client of the bench is 127.0.0.1). The first
//! server's pacing plan is what server-paced clients follow while the
//! server is down, as in production. The figures are defined as in the
//! simulator (docs/SIMULATION.md) and explained in docs/HERD.md.
//!
//! Every client notices the outage at once: the kernel resets every
//! connection of the killed process (the simulator's detection window 0).

mod balancer;
pub mod cluster;
mod figures;
mod fleet;
mod kernel;
mod report;
mod server;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use belay_proto::Config;

pub use figures::{compute, peak_in_window, Figures, ReadyChange};
pub use fleet::{Counts, Fleet};
pub use kernel::ListenDrops;
pub use report::{table, HerdReport, ServerCounts};
pub use server::{series, ServeProcess, ServeSettings};

use crate::measure::procfs;
use crate::LoadError;

/// The most clients one run may start.
pub const MAX_CLIENTS: usize = 20_000;

/// The longest horizon a run may have.
pub const MAX_HORIZON: Duration = Duration::from_secs(600);

/// One run: the servers, the fleet and the outage.
#[derive(Debug, Clone)]
pub struct HerdConfig {
    /// How both servers are started.
    pub serve: ServeSettings,
    /// Clients in the fleet (N).
    pub clients: usize,
    /// The policy's short name (as `belay sim --policy` names it).
    pub policy: String,
    /// The configuration every client's core runs.
    pub client_config: Config,
    /// How long the server stays down (D).
    pub down: Duration,
    /// When the run ends at the latest, from the kill (H).
    pub horizon: Duration,
    /// Clients started per second before the outage (below the accept rate,
    /// so none is refused and every backoff is fresh at the kill).
    pub ramp_rate: f64,
    /// How long the connected fleet runs before the kill.
    pub settle: Duration,
    /// Run seed: client `i`'s core seed is `belay_sim::client_seed(seed, i)`,
    /// as in the simulator.
    pub seed: u64,
}

impl HerdConfig {
    /// Whether the run is within the bench's bounds, and the process may
    /// hold its sockets.
    pub fn check(&self) -> Result<(), LoadError> {
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(LoadError::Target(format!(
                "clients must be 1..={MAX_CLIENTS}, not {}",
                self.clients
            )));
        }
        if self.horizon <= self.down || self.horizon > MAX_HORIZON {
            return Err(LoadError::Target(format!(
                "the horizon must be longer than the outage and at most {MAX_HORIZON:?}"
            )));
        }
        if !(self.ramp_rate > 0.0 && self.ramp_rate.is_finite()) {
            return Err(LoadError::Target("the ramp rate must be positive".into()));
        }
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        let needed = self.clients as u64 + 256;
        if soft < needed {
            return Err(LoadError::Target(format!(
                "ulimit -n is {soft}; {} clients need at least {needed}",
                self.clients
            )));
        }
        Ok(())
    }
}

/// Run the outage once and measure it.
pub async fn run(config: &HerdConfig) -> Result<HerdReport, LoadError> {
    config.check()?;
    let n = config.clients;
    let first = ServeProcess::start(&config.serve, (Ipv4Addr::LOCALHOST, 0).into()).await?;
    let addr = first.addr();
    let url = format!("ws://{addr}/ws");
    let mut fleet = Fleet::new();
    let ramp_started = Instant::now();
    ramp(&mut fleet, &url, config).await?;
    let ramp_bound = Duration::from_secs(60);
    let counts = fleet.wait_for(|c| c.ready >= n, ramp_bound).await;
    if counts.ready < n {
        fleet.close().await;
        first.kill().await?;
        return Err(LoadError::Protocol(format!(
            "only {} of {n} clients were ready {ramp_bound:?} after the ramp",
            counts.ready
        )));
    }
    let ramp = ramp_started.elapsed();
    // The steady fleet before the outage (a scenario parameter, not a wait
    // for anything).
    tokio::time::sleep(config.settle).await;

    let load_cpu_start = own_cpu()?;
    let kill_at = fleet.mark_kill();
    first.kill().await?;
    tokio::time::sleep_until((kill_at + config.down).into()).await;
    let spawned_at = Instant::now();
    let second = ServeProcess::start(&config.serve, addr).await?;
    let up_at = Instant::now();
    let drops_at_up = ListenDrops::now();
    let mut recovery = watch_recovery(&fleet, &second, kill_at + config.horizon).await?;
    recovery.listen_drops = ListenDrops::now().since(drops_at_up);
    let end_at = Instant::now();
    let load_cpu = own_cpu()? - load_cpu_start;
    let server = ServerCounts::scrape(&second).await;
    let figures = measured(&fleet, kill_at, [spawned_at, up_at, end_at]);
    fleet.close().await;
    second.kill().await?;
    Ok(HerdReport::new(
        config,
        ramp,
        up_at - kill_at,
        end_at - kill_at,
        figures,
        recovery,
        load_cpu,
        server,
    ))
}

/// Start the fleet's `config.clients` clients on `url`, `config.ramp_rate`
/// per second, each with its seed.
async fn ramp(fleet: &mut Fleet, url: &str, config: &HerdConfig) -> Result<(), LoadError> {
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / config.ramp_rate));
    for i in 0..config.clients {
        ticker.tick().await;
        let seed = belay_sim::client_seed(config.seed, i as u64);
        fleet
            .add(url, &config.client_config, seed)
            .map_err(|e| LoadError::Target(e.to_string()))?;
    }
    Ok(())
}

/// The fleet's figures since `kill_at`, with the new server spawned, up
/// and the run ended at the three instants.
fn measured(fleet: &Fleet, kill_at: Instant, [spawned, up, end]: [Instant; 3]) -> Figures {
    let (dials, changes) = fleet.recorded(kill_at);
    compute(
        fleet.len() as u64,
        fleet::micros(spawned, kill_at),
        fleet::micros(up, kill_at),
        fleet::micros(end, kill_at),
        &dials,
        &changes,
    )
}

/// The new server's CPU time, second by second, while the fleet comes back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recovery {
    /// The server's CPU time from its start until the end of the run.
    pub server_cpu: Duration,
    /// Its CPU time in each second after its start (the last one partial).
    pub server_cpu_per_s: Vec<Duration>,
    /// Connections the kernel's listen queues dropped meanwhile.
    pub listen_drops: ListenDrops,
}

/// Sample the server's CPU every second until every client is ready again
/// (since the kill) or `deadline`.
async fn watch_recovery(
    fleet: &Fleet,
    server: &ServeProcess,
    deadline: Instant,
) -> Result<Recovery, LoadError> {
    let n = fleet.len();
    let mut recovery = Recovery::default();
    let mut last = server.cpu()?;
    let start = last;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let step = (deadline - now).min(Duration::from_secs(1));
        let counts = fleet.wait_for(|c| c.ready_since_kill >= n, step).await;
        let cpu = server.cpu()?;
        recovery.server_cpu_per_s.push(cpu.saturating_sub(last));
        last = cpu;
        if counts.ready_since_kill >= n {
            break;
        }
    }
    recovery.server_cpu = last.saturating_sub(start);
    Ok(recovery)
}

fn own_cpu() -> Result<Duration, LoadError> {
    let ticks = procfs::sample(std::process::id())?.cpu_ticks;
    Ok(Duration::from_secs_f64(ticks as f64 / procfs::CLK_TCK))
}
