//! `belay sim spread` and `belay sim cost`, and the cost flags of the
//! outage scenarios: the herd under a realistic server (docs/SIMULATION.md).

use std::time::Duration;

use belay_sim::cost::CostModel;
use belay_sim::policy::select_cases;
use belay_sim::scenario::cost_sweep::run_cost_sweep;
use belay_sim::scenario::outage::OutageSpec;
use belay_sim::scenario::spread::run_spread;
use belay_sim::server::ServerOptions;
use belay_sim::{parse_duration, report};

/// Make every attempt cost the server work (all four flags have defaults;
/// giving `--handshake-cost` turns the model on).
#[derive(Debug, clap::Args)]
pub(crate) struct CostArgs {
    /// Work for every attempt that reaches the server (accept, TLS, upgrade
    /// request, admission check), e.g. `1ms`. Turns the cost model on.
    #[arg(long, value_parser = parse_duration)]
    handshake_cost: Option<Duration>,
    /// Extra work for an admitted session.
    #[arg(long, value_parser = parse_duration, default_value = "500us")]
    session_cost: Duration,
    /// CPUs doing connection work.
    #[arg(long, default_value_t = 1)]
    workers: u32,
    /// Attempts that may wait for a worker; more are dropped.
    #[arg(long, default_value_t = 4096)]
    backlog: usize,
}

impl CostArgs {
    fn model(&self, handshake: Duration) -> CostModel {
        let mut model = CostModel::new();
        model.handshake = handshake;
        model.session = self.session_cost;
        model.workers = self.workers.max(1);
        model.backlog = self.backlog;
        model
    }

    /// The cost model the flags describe, if `--handshake-cost` was given.
    pub(crate) fn cost_model(&self) -> Option<CostModel> {
        self.handshake_cost.map(|h| self.model(h))
    }
}

/// The fleet, outage and server flags the herd subcommands share.
#[derive(Debug, clap::Args)]
pub(crate) struct FleetArgs {
    /// Clients in the fleet.
    #[arg(long, default_value_t = 10_000)]
    clients: usize,
    /// How long the server is down.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    down: Duration,
    /// Connections per second the server admits once back.
    #[arg(long, default_value_t = 500)]
    rate: u64,
    /// Run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl FleetArgs {
    fn spec(&self, horizon: Duration) -> Result<OutageSpec, String> {
        if self.clients == 0 || self.clients > u32::MAX as usize {
            return Err("--clients must be between 1 and 4294967295".into());
        }
        let mut spec = OutageSpec::seed_scenario();
        spec.clients = self.clients;
        spec.down_for = self.down;
        spec.server = ServerOptions::new(self.rate);
        spec.horizon = horizon;
        spec.seed = self.seed;
        Ok(spec)
    }
}

/// `belay sim spread`: one policy with its notices spread over each window,
/// next to the bound of the best possible protocol.
#[derive(Debug, clap::Args)]
pub(crate) struct SpreadArgs {
    #[command(flatten)]
    fleet: FleetArgs,
    /// The policy (by name).
    #[arg(long, default_value = "belay-default")]
    policy: String,
    /// The detection windows, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, default_value = "0s,5s,10s,20s")]
    windows: Vec<Duration>,
    /// How long after the outage to simulate at most (default: three times
    /// what the server needs to admit the fleet, plus 30 s; at least 90 s).
    #[arg(long, value_parser = parse_duration)]
    horizon: Option<Duration>,
    /// Death phases per window (the dead server's clock offset, so where
    /// the death falls within its beat and slot grid); each cell reports
    /// the worst.
    #[arg(long, default_value_t = 32)]
    phases: usize,
}

/// `belay sim cost`: every policy on a server whose attempts cost work,
/// one column per handshake cost.
#[derive(Debug, clap::Args)]
pub(crate) struct CostSweepArgs {
    #[command(flatten)]
    fleet: FleetArgs,
    #[command(flatten)]
    cost: CostArgs,
    /// One policy by name, or `all`.
    #[arg(long, default_value = "all")]
    policy: String,
    /// The handshake costs to sweep, comma-separated.
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, default_value = "500us,1ms,2ms,3ms,5ms")]
    handshakes: Vec<Duration>,
    /// How long after the outage to simulate at most.
    #[arg(long, value_parser = parse_duration, default_value = "600s")]
    horizon: Duration,
}

pub(crate) fn run_spread_cmd(args: &SpreadArgs) -> Result<(), String> {
    let horizon = args
        .horizon
        .unwrap_or_else(|| crate::sim::fleet_horizon(args.fleet.clients, args.fleet.rate));
    let spec = args.fleet.spec(horizon)?;
    let cases = select_cases(Some(&args.policy))?;
    let [case] = cases.as_slice() else {
        return Err("--policy must name one policy".into());
    };
    let rows = run_spread(&spec, case, &args.windows, args.phases);
    print!("{}", report::spread_markdown(&spec, case, &rows));
    Ok(())
}

pub(crate) fn run_cost_cmd(args: &CostSweepArgs) -> Result<(), String> {
    let mut spec = args.fleet.spec(args.horizon)?;
    let cases = select_cases(Some(&args.policy))?;
    let base = args.cost.model(Duration::from_millis(1));
    spec.server.cost = Some(base);
    let cells = run_cost_sweep(&spec, &cases, base, &args.handshakes);
    print!("{}", report::cost_sweep_markdown(&spec, &cases, &cells));
    Ok(())
}
