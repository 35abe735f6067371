//! `belay lab`: every fault × every client × every transport × R repetitions against real
//! `belay serve --demo` processes, written up as markdown (docs/RESULTS.md).

use std::path::PathBuf;
use std::time::Duration;

use belay_lab::lab::{self, ClientKind, LabConfig, LabFault, LabTransport};
use belay_proto::message::Codec;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Arguments of `belay lab`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Repetitions per (fault, client).
    #[arg(long, default_value_t = 10)]
    reps: u32,
    /// Clients, comma-separated: naive, belay, python (the Python SDK:
    /// scripts/python-sdk-check.sh first), browser-naive, browser; the
    /// real peers socketio, socketio-tuned, partysocket, rws and, in
    /// Chromium, browser-socketio, browser-socketio-tuned,
    /// browser-partysocket, browser-rws (they need `npm ci` in peers/lab).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "naive,belay,browser-naive,browser"
    )]
    clients: Vec<ClientKind>,
    /// Faults, comma-separated (default: all of them). The cluster faults
    /// (deploy, node-kill, redis-down, redis-restart, sentinel-failover,
    /// sentinel-failover-wait, cluster-primary-killed, resharding,
    /// host-node-kill) need redis-server, redis-cli and haproxy on PATH;
    /// host-node-kill runs for Belay's clients only.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "freeze,service-down,slow-replies,flapping,restart,blackhole,link-cut,half-open,zombie,drain,websocket-blocked,deploy,node-kill,redis-down,redis-restart,sentinel-failover,sentinel-failover-wait,cluster-primary-killed,resharding,host-node-kill"
    )]
    faults: Vec<LabFault>,
    /// Transports, comma-separated: websocket, sse (WebSockets refused by
    /// the proxy throughout; Belay clients and single-server faults only).
    #[arg(long, value_delimiter = ',', default_value = "websocket,sse")]
    transports: Vec<LabTransport>,
    /// The codec the Belay clients ask for: json (the default) or binary
    /// (the Rust client's `codec(Codec::Binary)`, the browser client on
    /// `@belay/client/binary`; each ready over WebSocket must then be
    /// binary). The naive clients speak JSON either way.
    #[arg(long, default_value = "json", value_parser = parse_codec)]
    codec: Codec,
    /// Repetitions run at the same time.
    #[arg(long, default_value_t = 3)]
    jobs: usize,
    /// How long each fault lasts, in milliseconds (flapping excepted).
    #[arg(long, default_value_t = 3_000)]
    fault_ms: u64,
    /// How long flapping lasts, in milliseconds.
    #[arg(long, default_value_t = 15_000)]
    flapping_ms: u64,
    /// No repetition starts after this many minutes.
    #[arg(long, default_value_t = 45)]
    time_bound_mins: u64,
    /// Write the markdown here (default: standard output).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Exit with status 1 unless every Belay cell kept every guarantee.
    #[arg(long)]
    check: bool,
    /// The browser agent script.
    #[arg(long, default_value = "clients/js/lab/agent.mjs")]
    agent: PathBuf,
    /// Node.js.
    #[arg(long, default_value = "node")]
    node: PathBuf,
    /// The real peers' agent (socket.io-client, partysocket,
    /// reconnecting-websocket; in Node or in Chromium).
    #[arg(long, default_value = "peers/lab/agent.mjs")]
    peer_agent: PathBuf,
    /// The socket.io app the socket.io clients are measured against.
    #[arg(long, default_value = "peers/lab/server.mjs")]
    peer_server: PathBuf,
    /// Chromium.
    #[arg(long, default_value = "/usr/bin/chromium")]
    chromium: PathBuf,
    /// A Python with the Belay SDK installed, for the `python` client
    /// (scripts/python-sdk-check.sh makes this venv).
    #[arg(long, default_value = "target/python-sdk/venv/bin/python")]
    python: PathBuf,
    /// The Python SDK's lab agent.
    #[arg(long, default_value = "crates/belay-python/lab/agent.py")]
    python_agent: PathBuf,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let mut config = LabConfig::default();
    config.faults.clone_from(&args.faults);
    config.clients.clone_from(&args.clients);
    config.transports.clone_from(&args.transports);
    config.work.codec = args.codec;
    config.reps = args.reps.max(1);
    config.jobs = args.jobs.max(1);
    config.fault_for = Duration::from_millis(args.fault_ms.max(100));
    config.flapping_for = Duration::from_millis(args.flapping_ms.max(100));
    config.time_bound = Duration::from_secs(args.time_bound_mins * 60);
    config.server.exe = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    config.browser.node.clone_from(&args.node);
    config.browser.script.clone_from(&args.agent);
    config.browser.chromium.clone_from(&args.chromium);
    config.browser.peer_agent.clone_from(&args.peer_agent);
    config.browser.python.clone_from(&args.python);
    config.browser.python_agent.clone_from(&args.python_agent);
    if config.clients.contains(&ClientKind::Python)
        && !(args.python.exists() && args.python_agent.exists())
    {
        return Err(format!(
            "the python client needs {} with the SDK installed and {} (run scripts/python-sdk-check.sh from the repository root)",
            args.python.display(),
            args.python_agent.display()
        ));
    }
    config.server.node.clone_from(&args.node);
    config.server.socketio_script.clone_from(&args.peer_server);
    let peers = config.clients.iter().any(|c| c.peer().is_some());
    if peers && !(args.peer_agent.exists() && args.peer_server.exists()) {
        return Err(format!(
            "the peers' agent {} or server {} is missing (run from the repository root, after `npm ci` in peers/lab)",
            args.peer_agent.display(),
            args.peer_server.display()
        ));
    }
    let belay_browser = config
        .clients
        .iter()
        .any(|c| matches!(c, ClientKind::Browser | ClientKind::BrowserNaive));
    if belay_browser && !args.agent.exists() {
        return Err(format!(
            "the browser agent {} is missing (run from the repository root, or leave the browser clients out with --clients naive,belay)",
            args.agent.display()
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    // The matrix says how many repetitions apply (not every cell runs over every transport).
    let total = (config.faults.len() * config.clients.len() * config.transports.len()) as u64
        * u64::from(config.reps);
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} lab [{bar:40}] {pos}/{len} repetitions, {elapsed} elapsed, last: {msg}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let report = runtime.block_on(lab::run(&config, |p| {
        bar.set_length(p.total);
        bar.set_position(p.done);
        bar.set_message(p.last.clone());
    }));
    bar.finish_and_clear();
    let command = command_line(args);
    let text = lab::markdown(&report, &command, &machine());
    match &args.out {
        Some(path) => std::fs::write(path, &text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?,
        None => print!("{text}"),
    }
    let shortfalls: Vec<String> = report
        .cells
        .iter()
        .flat_map(|c| {
            c.shortfalls(&report.config)
                .into_iter()
                .map(move |s| format!("{} × {} × {}: {s}", c.fault, c.client, c.transport))
        })
        .collect();
    for s in &shortfalls {
        eprintln!("belay lab: {s}");
    }
    if args.check && !shortfalls.is_empty() {
        return Err(format!("{} Belay guarantees not kept", shortfalls.len()));
    }
    Ok(())
}

fn parse_codec(name: &str) -> Result<Codec, String> {
    match name {
        "json" => Ok(Codec::Json),
        "binary" => Ok(Codec::Binary),
        other => Err(format!("unknown codec {other:?} (json, binary)")),
    }
}

/// The command as a user would type it to get the same run.
fn command_line(args: &Args) -> String {
    let clients: Vec<&str> = args.clients.iter().map(|c| c.name()).collect();
    let faults: Vec<&str> = args.faults.iter().map(|f| f.name()).collect();
    let transports: Vec<&str> = args.transports.iter().map(|t| t.name()).collect();
    let mut line = format!(
        "belay lab --reps {} --jobs {} --clients {} --faults {} --transports {} --fault-ms {} --flapping-ms {}",
        args.reps,
        args.jobs,
        clients.join(","),
        faults.join(","),
        transports.join(","),
        args.fault_ms,
        args.flapping_ms
    );
    if args.codec == Codec::Binary {
        line.push_str(" --codec binary");
    }
    if args.clients.contains(&ClientKind::Python) {
        line.push_str(&format!(" --python {}", args.python.display()));
    }
    if let Some(out) = &args.out {
        line.push_str(&format!(" --out {}", out.display()));
    }
    line
}

/// CPU model, cores and memory, as /proc tells them.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory_gb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0 / 1024.0);
    format!("{cores} cores ({cpu}), {memory_gb:.0} GB RAM, Linux")
}
