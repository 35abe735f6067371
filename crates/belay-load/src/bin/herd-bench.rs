//! `herd-bench`: a fleet of real clients reconnecting after a real server
//! outage, per reconnect policy (docs/HERD.md). Prints one JSON line per
//! run on stdout, then a Markdown table.
//!
//! ```sh
//! herd-bench --policy fixed,full_jitter --clients 3000 --accept-rate 200 \
//!   --down 10s --horizon 90s --handshake-cost-us 1000 --worker-threads 1 --server-cpus 0
//! ```

use std::path::PathBuf;
use std::time::Duration;

use belay_load::suites::herd::{self, HerdConfig, ServeSettings};
use belay_proto::backoff::BackoffPolicy;
use belay_sim::parse_duration;
use belay_sim::policy::{select_cases, PolicyCase};
use clap::Parser;

#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Debug, Parser)]
#[command(
    about = "Real clients against a real `belay serve` that is killed and comes back (docs/HERD.md)",
    after_help = "Policies are the simulator's (`belay sim outage --policy NAME`): fixed, exponential, \
                  linear_random_start_uncapped, full_jitter, equal_jitter, decorrelated, \
                  decorrelated_capped, linear_random_start, grpc, belay-default. Durations take a \
                  unit (500ms, 10s, 2m). Pin the load generator itself with `taskset -c 1 herd-bench …`."
)]
struct Cli {
    /// Policies to run, one run each (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fixed,exponential,full_jitter,belay-default"
    )]
    policy: Vec<String>,
    /// Or one policy as JSON, as `belay sim --policy-json` takes it.
    #[arg(long, conflicts_with = "policy")]
    policy_json: Option<String>,
    /// Clients in the fleet (N).
    #[arg(long, default_value_t = 3_000)]
    clients: usize,
    /// The servers' --accept-rate (C).
    #[arg(long, default_value_t = 200.0)]
    accept_rate: f64,
    /// The servers' --expected-clients (default: N).
    #[arg(long)]
    expected_clients: Option<usize>,
    /// How long the server stays down (D).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    down: Duration,
    /// When a run ends at the latest, from the kill (H).
    #[arg(long, value_parser = parse_duration, default_value = "90s")]
    horizon: Duration,
    /// The servers' --handshake-cost-us.
    #[arg(long, default_value_t = 1_000)]
    handshake_cost_us: u64,
    /// The servers' --session-cost-us.
    #[arg(long, default_value_t = 0)]
    session_cost_us: u64,
    /// The servers' --worker-threads.
    #[arg(long, default_value_t = 1)]
    worker_threads: u16,
    /// Pin the servers to these CPUs (`taskset -c LIST`), e.g. 0.
    #[arg(long)]
    server_cpus: Option<String>,
    /// The servers' --max-pending-upgrades (and per IP: all clients are 127.0.0.1).
    #[arg(long, default_value_t = 2_048)]
    max_pending_upgrades: u32,
    /// Clients started per second before the outage (default: 0.8 C).
    #[arg(long)]
    ramp_rate: Option<f64>,
    /// How long the connected fleet runs before the kill.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    settle: Duration,
    /// The clients' connect timeout (the core's default is 10 s).
    #[arg(long, value_parser = parse_duration)]
    connect_timeout: Option<Duration>,
    /// Run seed (client i's core seed is derived from it, as in the simulator).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The `belay` binary (default: the one next to this executable).
    #[arg(long)]
    belay: Option<PathBuf>,
    /// Nodes behind HAProxy on one redis-server (each with --accept-rate);
    /// 1: one server, no balancer.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
}

fn main() -> Result<(), String> {
    let cli = Cli::parse();
    let cases = cases(&cli)?;
    let belay = match &cli.belay {
        Some(path) => path.clone(),
        None => std::env::current_exe()
            .map_err(|e| e.to_string())?
            .with_file_name("belay"),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut reports = Vec::new();
    let mut cluster_reports = Vec::new();
    for case in cases {
        let mut client_config = case.config.clone();
        if let Some(timeout) = cli.connect_timeout {
            client_config.set_connect_timeout(timeout);
        }
        let config = HerdConfig {
            serve: ServeSettings {
                belay: belay.clone(),
                accept_rate: cli.accept_rate,
                expected_clients: cli.expected_clients.unwrap_or(cli.clients),
                worker_threads: cli.worker_threads,
                handshake_cost_us: cli.handshake_cost_us,
                session_cost_us: cli.session_cost_us,
                max_pending_upgrades: cli.max_pending_upgrades,
                cpus: cli.server_cpus.clone(),
                broker: None,
            },
            clients: cli.clients,
            policy: case.name.clone(),
            client_config,
            down: cli.down,
            horizon: cli.horizon,
            ramp_rate: cli.ramp_rate.unwrap_or(0.8 * cli.accept_rate),
            settle: cli.settle,
            seed: cli.seed,
        };
        eprintln!("herd-bench: {} ({} clients)…", case.label, cli.clients);
        if cli.nodes > 1 {
            let report = runtime
                .block_on(herd::cluster::run(&config, cli.nodes.min(16)))
                .map_err(|e| format!("{}: {e}", case.name))?;
            println!("{}", report.to_json());
            cluster_reports.push(report);
            continue;
        }
        let report = runtime
            .block_on(herd::run(&config))
            .map_err(|e| format!("{}: {e}", case.name))?;
        println!("{}", report.to_json());
        reports.push(report);
    }
    println!();
    if cluster_reports.is_empty() {
        print!("{}", herd::table(&reports));
    } else {
        print!("{}", herd::cluster::table(&cluster_reports));
    }
    Ok(())
}

fn cases(cli: &Cli) -> Result<Vec<PolicyCase>, String> {
    if let Some(json) = &cli.policy_json {
        let policy: BackoffPolicy =
            serde_json::from_str(json).map_err(|e| format!("invalid --policy-json: {e}"))?;
        return Ok(vec![PolicyCase::new(
            "custom",
            &format!("custom {json}"),
            policy,
            true,
        )]);
    }
    let mut cases = Vec::new();
    for name in &cli.policy {
        let mut found = select_cases(Some(name))?;
        if found.iter().any(|case| !case.pacing) {
            return Err(format!(
                "{name}: a real server always sends pacing hints; run belay-default instead"
            ));
        }
        cases.append(&mut found);
    }
    Ok(cases)
}
