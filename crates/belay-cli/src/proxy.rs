//! `belay proxy`: the lab's TCP fault proxy in front of a loopback server,
//! with toxics switched at run time through its HTTP admin API and/or a
//! scripted timeline (docs/PROXY.md).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use belay_lab::admin::{self, DEFAULT_PROXY};
use belay_lab::{Registry, Timeline};

/// Arguments of `belay proxy`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Loopback address clients connect to (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Loopback address of the server to forward to. Without it, only the
    /// admin API runs and proxies are created with `POST /proxies`.
    #[arg(long)]
    upstream: Option<SocketAddr>,
    /// Name of the proxy started with `--upstream`.
    #[arg(long, default_value = DEFAULT_PROXY)]
    name: String,
    /// Loopback address of the admin API: `/proxies`, `/proxies/{name}/toxics`,
    /// `/proxies/{name}/timeline`…, and `/faults`, `/counters` for the
    /// proxy named `default` (see docs/PROXY.md).
    #[arg(long)]
    admin: Option<SocketAddr>,
    /// A JSON timeline of toxic changes to run on the `--upstream` proxy
    /// from its start, e.g. `{"steps":[{"at_ms":2000,"action":"add",
    /// "toxic":{"type":"blackhole"}},{"at_ms":5000,"action":"clear"}]}`.
    #[arg(long, value_name = "FILE")]
    timeline: Option<PathBuf>,
    /// Seed of every random draw (toxicity, jitter, slice sizes): the same
    /// seed reproduces the same run.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    if args.upstream.is_none() && args.admin.is_none() {
        return Err("give --upstream (a proxy), --admin (the API), or both".into());
    }
    let timeline = match &args.timeline {
        Some(_) if args.upstream.is_none() => {
            return Err("--timeline needs --upstream (the proxy it runs on)".into())
        }
        Some(path) => Some(load_timeline(path)?),
        None => None,
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(proxy(args, timeline))
}

/// Read and check a timeline file.
fn load_timeline(path: &Path) -> Result<Timeline, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the timeline {}: {e}", path.display()))?;
    Timeline::from_json(&text).map_err(|e| format!("{}: {e}", path.display()))
}

async fn proxy(args: &Args, timeline: Option<Timeline>) -> Result<(), String> {
    let registry = Registry::new(args.seed);
    if let Some(upstream) = args.upstream {
        let proxy = registry
            .create(&args.name, args.listen, upstream, Some(args.seed))
            .await
            .map_err(|e| e.to_string())?;
        eprintln!(
            "belay proxy {}: {} -> {} (seed {})",
            args.name,
            proxy.local_addr(),
            proxy.upstream(),
            args.seed
        );
        if let Some(timeline) = timeline {
            let steps = timeline.steps().len();
            proxy.run_timeline(timeline).map_err(|e| e.to_string())?;
            eprintln!(
                "belay proxy {}: timeline of {steps} steps running",
                args.name
            );
        }
    }
    let Some(admin_addr) = args.admin else {
        let _ = tokio::signal::ctrl_c().await;
        return Ok(());
    };
    let (local, serving) = admin::serve_registry(registry, admin_addr)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("belay proxy admin: http://{local}/proxies (see docs/PROXY.md)");
    tokio::select! {
        served = serving => served.map_err(|e| format!("admin endpoint failed: {e}")),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_files_are_read_and_checked() {
        let dir = std::env::temp_dir().join(format!("belay-proxy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.json");
        std::fs::write(
            &good,
            r#"{"steps":[{"at_ms":0,"action":"add","toxic":{"type":"blackhole"}},
                         {"at_ms":5000,"action":"clear"}]}"#,
        )
        .unwrap();
        assert_eq!(load_timeline(&good).unwrap().steps().len(), 2);
        let bad = dir.join("bad.json");
        std::fs::write(&bad, r#"{"steps":[{"at_ms":0,"action":"melt"}]}"#).unwrap();
        let error = load_timeline(&bad).unwrap_err();
        assert!(
            error.contains("bad.json") && error.contains("melt"),
            "{error}"
        );
        assert!(load_timeline(&dir.join("missing.json")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
