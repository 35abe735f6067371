//! `belay abuse`: each abuse against a fresh `belay serve --demo` next to
//! a well-behaved victim, reported as a table (docs/ABUSE.md).

use std::path::{Path, PathBuf};
use std::time::Duration;

use belay_load::suites::abuse::report::{self, AbuseReport};
use belay_load::suites::abuse::runner::{self, RunConfig};
use belay_load::suites::abuse::{self, Abuse};

/// Arguments of `belay abuse`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Only these abuses, comma-separated (default: all twelve).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Seconds of baseline and of abuse, each (1–600).
    #[arg(long, default_value_t = 10)]
    secs: u64,
    /// Longest recovery in seconds; it ends earlier once the server's RSS
    /// is back within 10 % of its baseline (and at least 5.5 s have
    /// passed, so every echo sent during the abuse got its deadline).
    #[arg(long, default_value_t = 30)]
    recovery_secs: u64,
    /// Markdown file to write the results into: between the
    /// `<!-- abuse-results:begin -->` and `<!-- abuse-results:end -->`
    /// markers if it has them, else appended (the file is created if
    /// missing).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Write every figure as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Exit non-zero if any abuse fails any criterion.
    #[arg(long)]
    check: bool,
    /// An extra flag for every `belay serve` started (repeatable), e.g.
    /// `--server-arg=--accept-rate=1000`.
    #[arg(long = "server-arg", value_name = "ARG", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// The attacker thread's nice value (0–19): 19 lets it use only the CPU
    /// the server and the victim leave idle, as an attacker on another
    /// host would; 0 runs it at the victim's priority.
    #[arg(long, default_value_t = belay_load::suites::abuse::attacker::DEFAULT_NICE, value_parser = clap::value_parser!(i32).range(0..=19))]
    attacker_nice: i32,
    /// The executable whose `serve --demo` is abused (default: this one).
    #[arg(long, value_name = "FILE")]
    exe: Option<PathBuf>,
    /// What to name as the commit in the report (default: `git describe`
    /// of the working directory).
    #[arg(long, value_name = "TEXT")]
    commit: Option<String>,
}

const BEGIN: &str = "<!-- abuse-results:begin -->";
const END: &str = "<!-- abuse-results:end -->";

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let abuses = if args.only.is_empty() {
        Abuse::ALL.to_vec()
    } else {
        abuse::parse_list(&args.only.join(","))?
    };
    let exe = match &args.exe {
        Some(exe) => exe.clone(),
        None => std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?,
    };
    let mut config = RunConfig::new(exe, Duration::from_secs(args.secs.clamp(1, 600)));
    config.recovery_max = Duration::from_secs(args.recovery_secs.clamp(1, 600));
    config.server_args = args.server_args.clone();
    config.attacker_nice = args.attacker_nice;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let mut reports = Vec::new();
    for abuse in abuses {
        eprintln!("belay abuse: {} — {}", abuse.name(), abuse.summary());
        let one = runtime.block_on(runner::run_one(abuse, &config))?;
        let failed = one.verdicts().failed();
        eprintln!(
            "belay abuse: {} {}",
            abuse.name(),
            if failed.is_empty() {
                "passed".to_owned()
            } else {
                format!("FAILED: {}", failed.join(", "))
            }
        );
        reports.push(one);
    }
    let block = results_block(&reports, &config, args);
    println!("{block}");
    if let Some(path) = &args.out {
        write_block(path, &block)?;
    }
    if let Some(path) = &args.json {
        let all: Vec<_> = reports.iter().map(AbuseReport::to_json).collect();
        let text = serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?;
        std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    let failing: Vec<&str> = reports
        .iter()
        .filter(|r| !r.verdicts().all())
        .map(|r| r.abuse.name())
        .collect();
    if args.check && !failing.is_empty() {
        return Err(format!("criteria not met by: {}", failing.join(", ")));
    }
    Ok(())
}

/// The header, the results table, the effort table and the incidents.
fn results_block(reports: &[AbuseReport], config: &RunConfig, args: &Args) -> String {
    let commit = args.commit.clone().unwrap_or_else(git_commit);
    let flags = if config.server_args.is_empty() {
        String::new()
    } else {
        format!(", server flags `{}`", config.server_args.join(" "))
    };
    let mut out = format!(
        "Measured {} at commit {commit}, on {}: `belay abuse --secs {} --attacker-nice {}` (baseline and abuse {} s each, recovery up to {} s{flags}).\n\n",
        command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_else(|| "(date unknown)".into()),
        machine(),
        config.phase.as_secs(),
        config.attacker_nice,
        config.phase.as_secs(),
        config.recovery_max.as_secs(),
    );
    out.push_str(&report::markdown(reports));
    out.push_str("\nThe attacker's effort and what the server answered it:\n\n");
    out.push_str(&report::effort_markdown(reports));
    let incidents = report::incidents(reports);
    if !incidents.is_empty() {
        out.push_str("\nIncidents (victim disconnects, refused probes, server failures):\n\n");
        out.push_str(&incidents);
    }
    out
}

/// Put `block` between the markers of the file at `path`.
fn write_block(path: &Path, block: &str) -> Result<(), String> {
    let old = std::fs::read_to_string(path).unwrap_or_default();
    let fenced = format!("{BEGIN}\n{block}{END}");
    let new = match (old.find(BEGIN), old.find(END)) {
        (Some(b), Some(e)) if b < e => format!("{}{fenced}{}", &old[..b], &old[e + END.len()..]),
        _ if old.is_empty() => format!("{fenced}\n"),
        _ => format!("{}\n\n{fenced}\n", old.trim_end()),
    };
    std::fs::write(path, new).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new(program)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}

fn git_commit() -> String {
    let Some(commit) = command_output("git", &["rev-parse", "--short", "HEAD"]) else {
        return "(unknown)".into();
    };
    let dirty = command_output("git", &["status", "--porcelain", "--untracked-files=no"]).is_some();
    if dirty {
        format!("{commit} (with uncommitted changes)")
    } else {
        commit
    }
}

/// "2 cores (MODEL), 24 GiB".
fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map_or("unknown CPU", str::trim)
        .to_owned();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let gib = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / (1024.0 * 1024.0));
    format!("{cores} cores ({model}), {gib:.0} GiB")
}
