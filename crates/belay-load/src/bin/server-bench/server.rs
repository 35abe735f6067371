//! The servers under test as child processes of this binary: `serve` (the
//! child's side: Belay or the floor on 127.0.0.1:0), [`ServerProcess`] (the
//! parent's side: start one, sample its RSS and CPU from `/proc`), and the
//! baseline build that may stand in for the floor.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use belay_load::clients::target::Target;
use belay_load::loads::broadcast::{self, BroadcastConfig, BroadcastReport};
use belay_load::measure::procfs::{self, CLK_TCK};
use belay_load::servers::floor::{self, FloorConfig};
use clap::ValueEnum;

/// Which server a child process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Kind {
    Belay,
    Floor,
}

pub(crate) async fn serve(
    kind: Kind,
    ping_interval: Duration,
    api_key: Option<String>,
) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("LISTEN {addr}");
    // Exit when the parent closes our stdin (or dies).
    tokio::spawn(async {
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut tokio::io::stdin(), &mut sink).await;
        std::process::exit(0);
    });
    match kind {
        Kind::Belay => {
            let server = belay_load::servers::belay::build(ping_interval);
            // The admin routes as `belay serve` has them (the admin UI's
            // once-a-second sampler runs, as it does there).
            let router = server.router().merge(server.admin_router());
            let router = match &api_key {
                Some(key) => router.merge(belay_standalone::api::router(
                    &server,
                    key,
                    API_MAX_BODY,
                    None,
                )),
                None => router,
            };
            server
                .serve(listener, router)
                .await
                .map_err(|e| e.to_string())
        }
        Kind::Floor => {
            let config = FloorConfig {
                ping_interval,
                ..FloorConfig::default()
            };
            floor::serve(listener, config).await;
            Ok(())
        }
    }
}

/// The bench server's longest API body (`api.max_body_bytes`' default).
pub(crate) const API_MAX_BODY: usize = 1 << 20;

/// A server child process.
pub(crate) struct ServerProcess {
    child: Child,
    pub(crate) target: Target,
}

impl ServerProcess {
    pub(crate) fn start(kind: Kind, ping_interval_ms: u64) -> Result<ServerProcess, String> {
        ServerProcess::start_with(kind, ping_interval_ms, None)
    }

    /// With `api_key`: this binary's Belay server with the HTTP API mounted.
    pub(crate) fn start_with(
        kind: Kind,
        ping_interval_ms: u64,
        api_key: Option<&str>,
    ) -> Result<ServerProcess, String> {
        let (exe, kind_arg) = match (kind, BASELINE.get()) {
            (Kind::Floor, Some(baseline)) => (baseline.clone(), "belay"),
            (Kind::Floor, None) => (std::env::current_exe().map_err(|e| e.to_string())?, "floor"),
            (Kind::Belay, _) => (std::env::current_exe().map_err(|e| e.to_string())?, "belay"),
        };
        let (exe, kind_arg) = match api_key {
            Some(_) => (std::env::current_exe().map_err(|e| e.to_string())?, "belay"),
            None => (exe, kind_arg),
        };
        let mut command = Command::new(exe);
        command
            .args(["serve", "--kind", kind_arg, "--ping-interval-ms"])
            .arg(ping_interval_ms.to_string());
        if let Some(key) = api_key {
            command.args(["--api-key", key]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let addr: SocketAddr = line
            .trim()
            .strip_prefix("LISTEN ")
            .and_then(|a| a.parse().ok())
            .ok_or_else(|| format!("unexpected server output {line:?}"))?;
        let target = Target::local(addr).map_err(|e| e.to_string())?;
        Ok(ServerProcess { child, target })
    }

    pub(crate) fn sample(&self) -> Result<procfs::ProcSample, String> {
        procfs::sample(self.child.id()).map_err(|e| e.to_string())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The other binary whose Belay server stands in for the floor, if any.
pub(crate) static BASELINE: OnceLock<PathBuf> = OnceLock::new();

/// What the first server of each pair is called: the floor, or the
/// baseline build.
pub(crate) fn reference() -> &'static str {
    if BASELINE.get().is_some() {
        "baseline"
    } else {
        "floor"
    }
}

pub(crate) fn kinds() -> [(Kind, &'static str); 2] {
    [(Kind::Floor, reference()), (Kind::Belay, "belay")]
}

/// One broadcast run on a fresh server; its report and the server's CPU
/// seconds over it.
pub(crate) async fn broadcast_once(
    server: &ServerProcess,
    config: &BroadcastConfig,
) -> Result<(BroadcastReport, f64), String> {
    let before = server.sample()?;
    let report = broadcast::run(&server.target, config)
        .await
        .map_err(|e| e.to_string())?;
    let after = server.sample()?;
    let cpu = after.cpu_ticks.saturating_sub(before.cpu_ticks) as f64 / CLK_TCK;
    Ok((report, cpu))
}
