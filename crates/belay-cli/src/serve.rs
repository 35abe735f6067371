//! `belay serve`: a Belay server on the embedded broker, optionally with the
//! demo application (feed channel, RPC methods, fault panel at `/`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use belay_server::{demo, Server, ServerConfig};

/// Arguments of `belay serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Serve the demo app: `feed` ticks every 500 ms, `echo`/`order.create`/`slow`
    /// methods, and the fault panel page at `/`.
    #[arg(long)]
    demo: bool,
    /// Sessions admitted per second.
    #[arg(long, default_value_t = 500.0)]
    accept_rate: f64,
    /// Server ping interval in milliseconds (advertised in `welcome`).
    #[arg(long, default_value_t = 25_000)]
    ping_interval_ms: u64,
    /// Milliseconds without any frame after a ping before the connection is
    /// reaped as a zombie.
    #[arg(long, default_value_t = 10_000)]
    pong_timeout_ms: u64,
    /// With --demo: milliseconds between two `feed` ticks.
    #[arg(long, default_value_t = 500)]
    feed_every_ms: u64,
    /// The fleet this server expects: reconnect pacing periods are sized for
    /// at least this many clients.
    #[arg(long, default_value_t = 0)]
    expected_clients: usize,
    /// Seconds the load balancer needs to notice `/readyz` = 503 during a drain.
    #[arg(long, default_value_t = 25)]
    lb_delay_secs: u64,
    /// Milliseconds a drain spreads the clients' reconnects over.
    #[arg(long, default_value_t = 10_000)]
    drain_spread_ms: u64,
    /// Serve wss:// (TLS) with this PEM certificate chain, leaf first
    /// (requires --tls-key).
    #[arg(long, value_name = "FILE")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key (PKCS#8, PKCS#1 or SEC1) of --tls-cert.
    #[arg(long, value_name = "FILE")]
    tls_key: Option<PathBuf>,
}

/// Why the TLS flags cannot be used.
#[derive(Debug)]
enum TlsFlagsError {
    /// `--tls-cert` without `--tls-key`.
    CertWithoutKey,
    /// `--tls-key` without `--tls-cert`.
    KeyWithoutCert,
    /// The files could not be turned into a TLS configuration.
    Load(belay_server::tls::TlsError),
}

impl std::fmt::Display for TlsFlagsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsFlagsError::CertWithoutKey => {
                f.write_str("--tls-cert needs --tls-key (give both or neither)")
            }
            TlsFlagsError::KeyWithoutCert => {
                f.write_str("--tls-key needs --tls-cert (give both or neither)")
            }
            TlsFlagsError::Load(e) => write!(f, "cannot use the TLS certificate: {e}"),
        }
    }
}

impl Args {
    /// The TLS configuration, if `--tls-cert` and `--tls-key` were given.
    fn tls(&self) -> Result<Option<Arc<belay_server::tls::rustls::ServerConfig>>, TlsFlagsError> {
        match (&self.tls_cert, &self.tls_key) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(TlsFlagsError::CertWithoutKey),
            (None, Some(_)) => Err(TlsFlagsError::KeyWithoutCert),
            (Some(cert), Some(key)) => belay_server::tls::load_pem(cert, key)
                .map(Some)
                .map_err(TlsFlagsError::Load),
        }
    }
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
    runtime.block_on(serve(args))
}

async fn serve(args: &Args) -> Result<(), String> {
    // Before anything listens: a bad certificate is a startup error.
    let tls = args.tls().map_err(|e| e.to_string())?;
    let mut config = ServerConfig::default()
        .with_accept_rate(args.accept_rate)
        .with_expected_fleet(args.expected_clients);
    config
        .limits
        .set_ping_interval(Duration::from_millis(args.ping_interval_ms))
        .set_pong_timeout(Duration::from_millis(args.pong_timeout_ms));
    config
        .drain
        .set_lb_delay(Duration::from_secs(args.lb_delay_secs))
        .set_reconnect_spread(Duration::from_millis(args.drain_spread_ms));
    let mut builder = Server::builder().config(config);
    if args.demo {
        builder = builder.methods(demo::methods());
    }
    let server = builder.build();
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?;
    let router = if args.demo {
        demo::spawn_feed(&server, Duration::from_millis(args.feed_every_ms.max(1)));
        demo::router(&server)
    } else {
        server.router()
    };
    let (http, ws) = if tls.is_some() {
        ("https", "wss")
    } else {
        ("http", "ws")
    };
    if args.demo {
        eprintln!("belay demo server: open {http}://{local}/ (WebSocket at {ws}://{local}/ws)");
    } else {
        eprintln!("belay server listening on {ws}://{local}/ws");
    }
    // SIGTERM or Ctrl-C starts a graceful drain; the process exits when drained.
    let drainer = server.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("drain requested by signal");
        drainer.drain();
    });
    let served = match tls {
        Some(tls) => server.serve_tls(listener, router, tls).await,
        None => server.serve(listener, router).await,
    };
    served.map_err(|e| format!("server failed: {e}"))
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
