//! `belay`: one command line in front of the Belay tools.
//!
//! As installed (`cargo install --path crates/belay-cli`) it serves,
//! connects, hosts and checks config files. The tool subcommands — `load`,
//! `abuse`, `lab`, `proxy`, `sim` — and the crates behind them (belay-load,
//! belay-lab, belay-sim) are built only with the `tools` feature
//! (`cargo build -p belay-cli --features tools`).
#![forbid(unsafe_code)]

/// jemalloc, configured in .cargo/config.toml to give freed memory back to
/// the OS within about a second (so a server's RSS comes back after a storm
/// of channels or connections; glibc keeps it).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(feature = "tools")]
mod abuse;
mod backoff_table;
mod config_cmd;
mod connect;
mod host;
#[cfg(feature = "tools")]
mod lab;
#[cfg(feature = "tools")]
mod load;
#[cfg(feature = "tools")]
mod proxy;
mod serve;
#[cfg(feature = "tools")]
mod sim;
#[cfg(feature = "tools")]
mod sim_herd;
#[cfg(feature = "tools")]
mod sim_progress;
#[cfg(feature = "tools")]
mod sim_stats;
mod token_cmd;

use std::process::ExitCode;

use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Belay: realtime connections that know whether they are really alive.
#[derive(Debug, Parser)]
#[command(name = "belay", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Abuse a fresh demo server next to a well-behaved victim and report what the victim noticed (docs/ABUSE.md).
    #[cfg(feature = "tools")]
    Abuse(abuse::Args),
    /// Show the reconnect delays each backoff policy of the core produces.
    Backoff(backoff_table::Args),
    /// Check a config file (`check FILE`) or print one with every default (`defaults`).
    Config(config_cmd::Args),
    /// Connect to a server: stdin lines become requests (`METHOD JSON`) or `sub CHANNEL`.
    Connect(connect::Args),
    /// Run a resident host on a relay: connected only while a client needs it (docs/HOSTS.md).
    Host(host::Args),
    /// Measure every client against every fault (real servers, proxy, link cuts) and write docs/RESULTS.md.
    #[cfg(feature = "tools")]
    Lab(lab::Args),
    /// Generate load against a loopback server: idle sessions, echo round trips, broadcast fan-out.
    #[cfg(feature = "tools")]
    Load(load::Args),
    /// Run the lab's TCP fault proxy (blackhole, latency, reset…) in front of a loopback server.
    #[cfg(feature = "tools")]
    Proxy(proxy::Args),
    /// Run a Belay server (`--demo`: with the demo app and fault panel at `/`).
    Serve(Box<serve::Args>),
    /// Simulate a fleet of clients (real core sessions, virtual time) against a server.
    #[cfg(feature = "tools")]
    Sim(sim::Args),
    /// Mint, inspect or check tokens against a config file, for development.
    Token(token_cmd::Args),
}

/// The ids of the flags of `subcommand` given on the command line (not
/// defaults, not environment variables).
fn given_on_command_line(matches: &clap::ArgMatches, subcommand: &str) -> Vec<String> {
    let Some(sub) = matches.subcommand_matches(subcommand) else {
        return Vec::new();
    };
    // Flags, not the groups `flatten` makes (named after their structs).
    let command = Cli::command();
    let flags: Vec<String> = command
        .find_subcommand(subcommand)
        .map(|c| {
            c.get_arguments()
                .map(|a| a.get_id().as_str().to_owned())
                .collect()
        })
        .unwrap_or_default();
    sub.ids()
        .filter(|id| flags.iter().any(|f| f == id.as_str()))
        .filter(|id| sub.value_source(id.as_str()) == Some(ValueSource::CommandLine))
        .map(|id| id.as_str().to_owned())
        .collect()
}

/// The subcommands built only with the `tools` feature.
#[cfg(not(feature = "tools"))]
const TOOLS: [&str; 5] = ["abuse", "lab", "load", "proxy", "sim"];

fn main() -> ExitCode {
    // Say why a tool subcommand is missing rather than "unrecognized".
    #[cfg(not(feature = "tools"))]
    if let Some(tool) = std::env::args()
        .nth(1)
        .filter(|a| TOOLS.contains(&a.as_str()))
    {
        eprintln!(
            "belay: `{tool}` is a tool subcommand, not in this build: build belay with \
             `cargo build --release -p belay-cli --features tools`"
        );
        return ExitCode::from(2);
    }
    let matches = Cli::command().get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    let result = match cli.command {
        #[cfg(feature = "tools")]
        Command::Abuse(args) => abuse::run(&args),
        Command::Backoff(args) => backoff_table::run(&args),
        // Its own exit codes (see connect.rs).
        Command::Connect(args) => return connect::run(&args),
        Command::Host(args) => return host::run(&args),
        #[cfg(feature = "tools")]
        Command::Lab(args) => lab::run(&args),
        #[cfg(feature = "tools")]
        Command::Load(args) => load::run(&args),
        #[cfg(feature = "tools")]
        Command::Proxy(args) => proxy::run(&args),
        Command::Config(args) => config_cmd::run(&args),
        Command::Serve(args) => serve::run(&args, &given_on_command_line(&matches, "serve")),
        #[cfg(feature = "tools")]
        Command::Sim(args) => sim::run(&args),
        // Exit 1 when `check` refuses the token.
        Command::Token(args) => match token_cmd::run(&args) {
            Ok(true) => Ok(()),
            Ok(false) => return ExitCode::from(1),
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("belay: {message}");
            ExitCode::from(2)
        }
    }
}
