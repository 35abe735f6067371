//! `belay proxy`: the lab's TCP fault proxy in front of a loopback server,
//! switched at run time through its HTTP admin endpoint.

use std::net::SocketAddr;

use belay_lab::{admin, Proxy};

/// Arguments of `belay proxy`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Loopback address clients connect to (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Loopback address of the server to forward to.
    #[arg(long)]
    upstream: SocketAddr,
    /// Loopback address of the admin endpoint: `GET/POST /faults`,
    /// `GET /counters` (e.g. `{"mode":"blackhole"}`; see belay-lab's docs).
    #[arg(long)]
    admin: Option<SocketAddr>,
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
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
    runtime.block_on(proxy(args))
}

async fn proxy(args: &Args) -> Result<(), String> {
    let proxy = Proxy::start(args.listen, args.upstream)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "belay proxy: {} -> {} (fault: pass)",
        proxy.local_addr(),
        proxy.upstream()
    );
    let Some(admin_addr) = args.admin else {
        let _ = tokio::signal::ctrl_c().await;
        return Ok(());
    };
    let (local, serving) = admin::serve(proxy.clone(), admin_addr)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!("belay proxy admin: http://{local}/faults (GET, POST) and /counters");
    tokio::select! {
        served = serving => served.map_err(|e| format!("admin endpoint failed: {e}")),
        _ = tokio::signal::ctrl_c() => Ok(()),
    }
}
