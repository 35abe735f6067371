//! `belay host URL --token T`: a resident host on the relay at `URL`
//! (docs/HOSTS.md). It beats the relay's control plane, holds a session
//! only while a client needs it, and serves two methods: `echo` (its
//! params back) and `info` (`{"host": ID, "pid": N, "wakes": N}`).
//!
//! Every heartbeat's outcome goes to stdout as a JSON line
//! (`{"ev":"beat","needed":true|false|null,"awake":bool,"starts":N,"stops":N}`,
//! `needed` null when the relay did not say or the beat failed:
//! `"failed":true`), so a script can follow the host's sleep. SIGINT or
//! SIGTERM stops it: the session ends, every task ends, and it exits 0.

use std::process::ExitCode;
use std::time::Duration;

use belay_client::belay_proto::host::{Beat, IdleSleepConfig};
use belay_client::host::{HostBuilder, HostError};
use serde_json::json;

/// Arguments of `belay host`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The relay's WebSocket URL (`ws://` or `wss://`); the heartbeat goes to `hosts/heartbeat` beside it.
    url: String,
    /// The host token (its JWT claim `host` names the host).
    #[arg(long)]
    token: String,
    /// The least time up after a wake before the host may sleep again, in milliseconds.
    #[arg(long, default_value_t = 60_000)]
    min_awake_ms: u64,
    /// The heartbeat interval until the relay names one, in milliseconds.
    #[arg(long, default_value_t = 15_000)]
    interval_ms: u64,
}

/// Run the host until SIGINT or SIGTERM.
pub(crate) fn run(args: &Args) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("belay host: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(serve(args))
}

async fn serve(args: &Args) -> ExitCode {
    let pid = std::process::id();
    let host = HostBuilder::new(args.url.clone(), args.token.clone())
        .sleep(IdleSleepConfig::default().with_min_awake(Duration::from_millis(args.min_awake_ms)))
        .interval(Duration::from_millis(args.interval_ms))
        .method("echo", |params| async move { Ok::<_, HostError>(params) })
        .method("info", move |_| async move {
            Ok::<_, HostError>(json!({ "pid": pid }))
        })
        .start();
    let mut status = host.status();
    let report = tokio::spawn(async move {
        while status.changed().await.is_ok() {
            let s = status.borrow_and_update().clone();
            let (needed, failed) = match s.last_beat {
                Some(Beat::Answered { needed }) => (needed, false),
                Some(Beat::Failed) => (None, true),
                _ => (None, false),
            };
            let mut line = json!({
                "ev": "beat",
                "host": s.id,
                "needed": needed,
                "awake": s.awake,
                "beats": s.stats.beats,
                "starts": s.stats.starts,
                "stops": s.stats.stops,
            });
            if failed {
                line["failed"] = json!(true);
            }
            println!("{line}");
        }
    });
    let stopped = wait_for_signal().await;
    host.stop().await;
    let _ = report.await;
    println!("{}", json!({ "ev": "stopped" }));
    stopped
}

/// SIGINT or SIGTERM.
async fn wait_for_signal() -> ExitCode {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        eprintln!("belay host: cannot listen for signals");
        return ExitCode::FAILURE;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    ExitCode::SUCCESS
}
