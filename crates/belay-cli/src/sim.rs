//! `belay sim`: the fleet simulator (crate `belay-sim`) from the command line.

use std::path::PathBuf;
use std::time::Duration;

use belay_proto::backoff::BackoffPolicy;
use belay_sim::policy::{select_cases, PolicyCase};
use belay_sim::scenario::blip::{run_blip_all, BlipSpec, Detection};
use belay_sim::scenario::flapping::{run_flapping_all, FlappingSpec};
use belay_sim::scenario::outage::{run_outage_all, OutageSpec};
use belay_sim::server::{Balancer, ServerOptions};
use belay_sim::{outage_svg, parse_duration, report, EngineStats, Progress};

use crate::sim_herd::{run_cost_cmd, run_spread_cmd, CostArgs, CostSweepArgs, SpreadArgs};
use crate::sim_progress::with_progress;
use crate::sim_stats::RunStats;

/// Arguments of `belay sim`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    scenario: Scenario,
}

#[derive(Debug, clap::Subcommand)]
enum Scenario {
    /// N clients lose the server at once; it is down, then admits at a fixed rate.
    Outage(MassArgs),
    /// Like `outage`, but the server announces the restart with reconnect advice.
    Restart(MassArgs),
    /// One client against a server that drops every connection soon after it is ready.
    Flapping(FlappingArgs),
    /// One client's own network drops for a few seconds; the server is healthy.
    Blip(BlipArgs),
    /// One policy against the outage with notices spread over several
    /// windows, next to the bound of the best possible protocol.
    Spread(SpreadArgs),
    /// Every policy against the outage on a server whose every attempt
    /// costs work, one column per handshake cost.
    Cost(CostSweepArgs),
}

/// Flags every scenario has.
#[derive(Debug, clap::Args)]
struct Common {
    /// One policy by name, or `all`.
    #[arg(long, default_value = "all")]
    policy: String,
    /// Or any policy as JSON (as `belay backoff --policy-json` takes it), e.g.
    /// '{"kind":"full_jitter","base_ms":500,"cap_ms":10000}'.
    #[arg(long, conflicts_with = "policy")]
    policy_json: Option<String>,
    /// The server sends no pacing hints in `welcome`, whatever the policy.
    #[arg(long)]
    no_pacing: bool,
    /// Run seed (client i gets its own seed derived from it).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Round-trip time to the server (connect latency).
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    latency: Duration,
    /// Also write the results as CSV to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Print wall time, events, events/s and peak memory to stderr.
    #[arg(long)]
    stats: bool,
}

/// `--balancer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BalancerArg {
    /// One node after the other.
    RoundRobin,
    /// A node drawn at random for every attempt.
    Random,
}

#[derive(Debug, clap::Args)]
struct MassArgs {
    #[command(flatten)]
    common: Common,
    /// Clients in the fleet.
    #[arg(long, default_value_t = 10_000)]
    clients: usize,
    /// How long the server is down.
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    down: Duration,
    /// Connections per second the server admits once back (token bucket).
    #[arg(long, default_value_t = 500)]
    rate: u64,
    /// How long after the outage to simulate at most (default: long
    /// enough for the server to admit the fleet three times over at
    /// `--rate`, plus 30 s; at least 90 s).
    #[arg(long, value_parser = parse_duration)]
    horizon: Option<Duration>,
    /// Tokens in the bucket when the server comes back.
    #[arg(long, default_value_t = 0.0)]
    initial_tokens: f64,
    /// The bucket's capacity in tokens (default: the rate).
    #[arg(long)]
    bucket_capacity: Option<f64>,
    /// Fraction of the rate the server's pacing plan aims at (default 0.95).
    #[arg(long)]
    headroom: Option<f64>,
    /// Tokens a refused attempt burns (handshake/TLS cost); 0 = free.
    #[arg(long, default_value_t = 0.0)]
    reject_cost: f64,
    /// A silent death that clients notice by their own heartbeat, spread
    /// uniformly over this window (0: every connection is reset at once).
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    detection_window: Duration,
    /// The server pings every connection on its beat at this interval, as
    /// belay-server does (every 8 s by default); the death is then silent and the
    /// clients notice it by the missing pings.
    #[arg(long, value_parser = parse_duration)]
    server_ping: Option<Duration>,
    /// Nodes behind a balancer, each admitting `--rate` per second and
    /// planning its slots for the cluster's capacity (nodes × rate).
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// How the balancer spreads attempts over the nodes.
    #[arg(long, value_enum, default_value = "round-robin")]
    balancer: BalancerArg,
    /// With several nodes, each plans its slots for itself alone instead of
    /// for the cluster's capacity.
    #[arg(long)]
    node_plans: bool,
    /// Refuse an attempt while up as belay-server does, with HTTP 503 and
    /// `Retry-After` (the client comes back 1–2 s later), instead of the
    /// seed's free refused connection.
    #[arg(long)]
    answer_503: bool,
    /// Plot attempts/s and connected clients per policy to this SVG file.
    #[arg(long)]
    svg: Option<PathBuf>,
    #[command(flatten)]
    cost: CostArgs,
}

#[derive(Debug, clap::Args)]
struct FlappingArgs {
    #[command(flatten)]
    common: Common,
    /// Independent copies of the client (the table shows their mean).
    #[arg(long, default_value_t = 100)]
    clients: usize,
    /// The server drops each connection this long after it is ready.
    #[arg(long, value_parser = parse_duration, default_value = "300ms")]
    drop_after: Duration,
    /// How long to watch.
    #[arg(long, value_parser = parse_duration, default_value = "10m")]
    duration: Duration,
}

#[derive(Debug, clap::Args)]
struct BlipArgs {
    #[command(flatten)]
    common: Common,
    /// Independent copies of the client (the table shows the distribution).
    #[arg(long, default_value_t = 1000)]
    clients: usize,
    /// How long the client's network is away.
    #[arg(long, value_parser = parse_duration, default_value = "3s")]
    down: Duration,
    /// How the client notices: `socket` (the socket errors at once) or
    /// `heartbeat` (the connection silently dies; only the probe notices).
    #[arg(long, default_value = "socket", value_parser = ["socket", "heartbeat"])]
    detection: String,
    /// How long after the network's return to keep watching.
    #[arg(long, value_parser = parse_duration, default_value = "60s")]
    horizon: Duration,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    match &args.scenario {
        Scenario::Outage(mass) => run_mass(mass, false),
        Scenario::Restart(mass) => run_mass(mass, true),
        Scenario::Flapping(flapping) => run_flapping(flapping),
        Scenario::Blip(blip) => run_blip(blip),
        Scenario::Spread(spread) => run_spread_cmd(spread),
        Scenario::Cost(cost) => run_cost_cmd(cost),
    }
}

fn cases(common: &Common) -> Result<Vec<PolicyCase>, String> {
    let mut cases = match &common.policy_json {
        Some(json) => {
            let policy: BackoffPolicy =
                serde_json::from_str(json).map_err(|e| format!("invalid --policy-json: {e}"))?;
            vec![PolicyCase::new(
                "custom",
                &format!("custom {json}"),
                policy,
                true,
            )]
        }
        None => select_cases(Some(&common.policy))?,
    };
    if common.no_pacing {
        for case in &mut cases {
            case.pacing = false;
        }
    }
    Ok(cases)
}

fn run_mass(args: &MassArgs, planned: bool) -> Result<(), String> {
    if args.clients == 0 || args.clients > u32::MAX as usize {
        return Err("--clients must be between 1 and 4294967295".into());
    }
    if args.nodes == 0 || args.nodes > 1_000 || (planned && args.nodes > 1) {
        return Err("--nodes must be between 1 and 1000 (1 for a planned restart)".into());
    }
    let cases = cases(&args.common)?;
    let mut spec = OutageSpec::seed_scenario();
    spec.clients = args.clients;
    spec.down_for = args.down;
    spec.server = ServerOptions::new(args.rate);
    spec.server.initial_tokens = args.initial_tokens;
    spec.server.capacity = args.bucket_capacity;
    spec.server.headroom = args.headroom;
    spec.server.reject_cost = args.reject_cost;
    spec.server.ping_interval = args.server_ping.filter(|i| !i.is_zero());
    spec.server.cost = args.cost.cost_model();
    spec.server.nodes = args.nodes;
    spec.server.balancer = match args.balancer {
        BalancerArg::RoundRobin => Balancer::RoundRobin,
        BalancerArg::Random => Balancer::Random,
    };
    spec.server.cluster_plan = !args.node_plans;
    spec.server.answer_503 = args.answer_503;
    spec.horizon = args
        .horizon
        .unwrap_or_else(|| fleet_horizon(args.clients, args.rate * args.nodes as u64));
    spec.seed = args.common.seed;
    spec.detection_window = args.detection_window;
    spec.latency = args.common.latency;
    spec.planned = planned;
    let stats = RunStats::start();
    let runs = with_progress(|progress: &Progress| run_outage_all(&spec, &cases, Some(progress)));
    let engine: Vec<EngineStats> = runs.iter().map(|r| r.stats).collect();
    print!("{}", report::outage_markdown(&spec, &runs));
    write_csv(&args.common, || report::outage_csv(&spec, &runs))?;
    if let Some(path) = &args.svg {
        outage_svg(path, &spec, &runs)?;
    }
    finish_stats(&args.common, &stats, &engine);
    Ok(())
}

fn run_flapping(args: &FlappingArgs) -> Result<(), String> {
    if args.clients == 0 {
        return Err("--clients must be at least 1".into());
    }
    let cases = cases(&args.common)?;
    let mut spec = FlappingSpec::seed_scenario();
    spec.clients = args.clients;
    spec.drop_after = args.drop_after;
    spec.duration = args.duration;
    spec.seed = args.common.seed;
    spec.latency = args.common.latency;
    let stats = RunStats::start();
    let runs = with_progress(|progress: &Progress| run_flapping_all(&spec, &cases, Some(progress)));
    let engine: Vec<EngineStats> = runs.iter().map(|r| r.stats).collect();
    print!("{}", report::flapping_markdown(&spec, &runs));
    write_csv(&args.common, || report::flapping_csv(&runs))?;
    finish_stats(&args.common, &stats, &engine);
    Ok(())
}

fn run_blip(args: &BlipArgs) -> Result<(), String> {
    if args.clients == 0 {
        return Err("--clients must be at least 1".into());
    }
    let cases = cases(&args.common)?;
    let mut spec = BlipSpec::default_scenario();
    spec.clients = args.clients;
    spec.down = args.down;
    spec.detection = if args.detection == "heartbeat" {
        Detection::Heartbeat
    } else {
        Detection::SocketError
    };
    spec.horizon = args.horizon;
    spec.seed = args.common.seed;
    spec.latency = args.common.latency;
    let stats = RunStats::start();
    let runs = with_progress(|progress: &Progress| run_blip_all(&spec, &cases, Some(progress)));
    let engine: Vec<EngineStats> = runs.iter().map(|r| r.stats).collect();
    print!("{}", report::blip_markdown(&spec, &runs));
    write_csv(&args.common, || report::blip_csv(&runs))?;
    finish_stats(&args.common, &stats, &engine);
    Ok(())
}

fn write_csv(common: &Common, csv: impl FnOnce() -> String) -> Result<(), String> {
    if let Some(path) = &common.csv {
        std::fs::write(path, csv()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(())
}

fn finish_stats(common: &Common, stats: &RunStats, engine: &[EngineStats]) {
    if common.stats {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        eprintln!("{}", stats.finish(engine));
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: Args,
    }

    fn parse(words: &[&str]) -> Result<Args, clap::Error> {
        Wrapper::try_parse_from(std::iter::once("sim").chain(words.iter().copied())).map(|w| w.args)
    }

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("belay-sim-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_small_outage_writes_its_csv_and_svg() {
        let (csv, svg) = (temp("outage.csv"), temp("outage.svg"));
        let args = parse(&[
            "outage",
            "--clients",
            "200",
            "--rate",
            "10",
            "--policy",
            "belay-default",
            "--csv",
            csv.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
        ])
        .unwrap();
        run(&args).unwrap();
        let table = std::fs::read_to_string(&csv).unwrap();
        assert!(table.starts_with("scenario,policy,"), "{table}");
        assert!(table.contains("outage,belay-default,"), "{table}");
        let picture = std::fs::read_to_string(&svg).unwrap();
        assert!(picture.contains("<svg") && picture.contains("belay-default"));
        let _ = std::fs::remove_file(csv);
        let _ = std::fs::remove_file(svg);
    }

    #[test]
    fn every_scenario_runs_from_the_command_line() {
        for words in [
            &["restart", "--clients", "50", "--policy", "fixed"][..],
            &[
                "flapping",
                "--clients",
                "2",
                "--duration",
                "1m",
                "--policy",
                "exponential",
            ],
            &[
                "blip",
                "--clients",
                "5",
                "--detection",
                "heartbeat",
                "--policy",
                "grpc",
            ],
            &[
                "spread",
                "--clients",
                "100",
                "--rate",
                "5",
                "--windows",
                "0s,20s",
            ],
            &[
                "cost",
                "--clients",
                "100",
                "--rate",
                "5",
                "--policy",
                "fixed",
                "--handshakes",
                "1ms,50ms",
            ],
            &[
                "outage",
                "--clients",
                "100",
                "--rate",
                "5",
                "--policy",
                "belay-default",
                "--handshake-cost",
                "2ms",
            ],
        ] {
            run(&parse(words).unwrap()).unwrap();
        }
    }

    #[test]
    fn a_policy_given_as_json_runs_as_a_custom_row() {
        let json = r#"{"kind":"full_jitter","base_ms":500,"cap_ms":10000}"#;
        let args = parse(&["outage", "--clients", "20", "--policy-json", json]).unwrap();
        let Scenario::Outage(mass) = &args.scenario else {
            panic!("parsed as outage")
        };
        let cases = cases(&mass.common).unwrap();
        assert_eq!(cases.len(), 1);
        assert_eq!(cases[0].name, "custom");
        run(&args).unwrap();
    }

    #[test]
    fn unknown_policies_and_durations_without_units_are_refused() {
        let args = parse(&["outage", "--policy", "nope"]).unwrap();
        let error = run(&args).unwrap_err();
        assert!(error.contains("belay-default"), "{error}");
        assert!(parse(&["outage", "--down", "10"]).is_err());
        assert!(parse(&["blip", "--detection", "telepathy"]).is_err());
    }

    #[test]
    fn no_pacing_switches_the_hints_off_for_every_row() {
        let args = parse(&["outage", "--no-pacing"]).unwrap();
        let Scenario::Outage(mass) = &args.scenario else {
            panic!("parsed as outage")
        };
        assert!(cases(&mass.common).unwrap().iter().all(|c| !c.pacing));
    }
}

/// A horizon that fits the fleet: the server admits `rate` connections a
/// second, so a fleet of `clients` needs `clients / rate` seconds to come
/// back at best; three times that, plus 30 s, leaves every policy room to
/// finish (at least 90 s, the horizon of a 10,000-client fleet at 500/s).
pub(crate) fn fleet_horizon(clients: usize, rate: u64) -> Duration {
    let admit = clients as f64 / rate.max(1) as f64;
    Duration::from_secs_f64(admit * 3.0 + 30.0).max(Duration::from_secs(90))
}

#[cfg(test)]
mod horizon_tests {
    use super::*;

    #[test]
    fn the_default_horizon_grows_with_the_fleet() {
        assert_eq!(fleet_horizon(10_000, 500), Duration::from_secs(90));
        assert_eq!(fleet_horizon(100_000, 500), Duration::from_secs(630));
        assert_eq!(fleet_horizon(1_000, 500), Duration::from_secs(90));
        assert!(fleet_horizon(1_000_000, 0) > Duration::from_secs(3_000_000));
    }
}
