//! `belay`: one command line in front of the Belay tools.
#![forbid(unsafe_code)]

/// jemalloc, configured in .cargo/config.toml to give freed memory back to
/// the OS within about a second (so a server's RSS comes back after a storm
/// of channels or connections; glibc keeps it).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod abuse;
mod backoff_table;
mod connect;
mod lab;
mod load;
mod proxy;
mod serve;
mod sim;
mod sim_progress;
mod sim_stats;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    Abuse(abuse::Args),
    /// Show the reconnect delays each backoff policy of the core produces.
    Backoff(backoff_table::Args),
    /// Connect to a server: stdin lines become requests (`METHOD JSON`) or `sub CHANNEL`.
    Connect(connect::Args),
    /// Measure every client against every fault (real servers, proxy, link cuts) and write docs/RESULTS.md.
    Lab(lab::Args),
    /// Generate load against a loopback server: idle sessions, echo round trips, broadcast fan-out.
    Load(load::Args),
    /// Run the lab's TCP fault proxy (blackhole, latency, reset…) in front of a loopback server.
    Proxy(proxy::Args),
    /// Run a Belay server (`--demo`: with the demo app and fault panel at `/`).
    Serve(Box<serve::Args>),
    /// Simulate a fleet of clients (real core sessions, virtual time) against a server.
    Sim(sim::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Abuse(args) => abuse::run(&args),
        Command::Backoff(args) => backoff_table::run(&args),
        // Its own exit codes (see connect.rs).
        Command::Connect(args) => return connect::run(&args),
        Command::Lab(args) => lab::run(&args),
        Command::Load(args) => load::run(&args),
        Command::Proxy(args) => proxy::run(&args),
        Command::Serve(args) => serve::run(&args),
        Command::Sim(args) => sim::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("belay: {message}");
            ExitCode::from(2)
        }
    }
}
