//! `belay serve`: a Belay server on the embedded broker (or, with
//! `--broker redis://…`, on Redis, shared with every other node), optionally
//! with the demo application (feed channel, RPC methods, fault panel at `/`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use belay_demo::Demo;
use belay_redis::{RedisBroker, RedisConfig};
use belay_server::broker::{Broker, MemoryBroker};
use belay_server::{Server, ServerConfig};

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
    /// Where channels live: `memory` (this process only) or a Redis URL,
    /// `redis://[user[:password]@]host:port[/db]` (`rediss://` for TLS),
    /// shared by every node on it.
    #[arg(long, default_value = "memory", value_name = "URL")]
    broker: String,
    /// With a Redis broker: the prefix of every key and PUB/SUB name.
    #[arg(long, default_value = "belay")]
    redis_prefix: String,
    /// With `rediss://`: the PEM CA certificates Redis's certificate must
    /// chain to (default: the system's trusted roots).
    #[arg(long, value_name = "FILE")]
    redis_ca: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
}

impl Args {
    /// The broker `--broker` names, connected (and the Redis broker again,
    /// for its cluster routes).
    async fn broker(
        &self,
        config: &ServerConfig,
    ) -> Result<(Arc<dyn Broker>, Option<RedisBroker>), String> {
        if self.broker == "memory" {
            return Ok((Arc::new(MemoryBroker::new(config.history)), None));
        }
        if !self.broker.starts_with("redis://") && !self.broker.starts_with("rediss://") {
            return Err(format!(
                "--broker {}: expected `memory` or a redis:// (rediss://) URL",
                self.broker
            ));
        }
        let history = &config.history;
        let mut redis = RedisConfig::new(self.broker.clone())
            .prefix(self.redis_prefix.clone())
            .history_len(history.max_len)
            .history_age(history.max_age);
        redis.max_channels = history.max_channels;
        if let Some(path) = &self.redis_ca {
            let pem =
                std::fs::read(path).map_err(|e| format!("--redis-ca {}: {e}", path.display()))?;
            redis = redis.tls_ca_pem(pem);
        }
        let broker = RedisBroker::connect(redis)
            .await
            .map_err(|e| format!("--broker: {e}"))?;
        Ok((Arc::new(broker.clone()), Some(broker)))
    }
}

/// The server's limits (docs/SERVER.md lists each with its response).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Limits")]
pub(crate) struct LimitArgs {
    /// Origins allowed to open a session (repeat or comma-separate), e.g.
    /// `https://app.example.com`; none given: any. Upgrades from other origins
    /// get 403.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", value_delimiter = ',')]
    allowed_origins: Vec<String>,
    /// Longest inbound frame in bytes (close 1009 above it).
    #[arg(long, default_value_t = 64 * 1024)]
    max_frame_len: usize,
    /// Data frames per second per connection (over: rate_limited; a flood: 4029).
    #[arg(long, default_value_t = 100.0)]
    messages_per_sec: f64,
    /// Data frames a connection may send at once.
    #[arg(long, default_value_t = 200)]
    burst: u32,
    /// Liveness frames (pings, pongs) per second per connection, apart from data.
    #[arg(long, default_value_t = 10.0)]
    liveness_per_sec: f64,
    /// Liveness frames at once (more refused than this: 4029 ping flood).
    #[arg(long, default_value_t = 50)]
    liveness_burst: u32,
    /// Milliseconds from the upgrade to `connect` (close 4008 after it).
    #[arg(long, default_value_t = 10_000)]
    handshake_timeout_ms: u64,
    /// Milliseconds a new TCP connection has for its PROXY header, TLS and
    /// request headers.
    #[arg(long, default_value_t = 5_000)]
    upgrade_timeout_ms: u64,
    /// Connections (upgraded or not) from one IP (an IPv6 /64): 429 above it.
    #[arg(long, default_value_t = 1_000)]
    max_connections_per_ip: u32,
    /// TCP connections not yet upgraded, from all sources: 503 above it.
    #[arg(long, default_value_t = 2_048)]
    max_pending_upgrades: u32,
    /// TCP connections not yet upgraded from one IP: 503 above it.
    #[arg(long, default_value_t = 64)]
    max_pending_upgrades_per_ip: u32,
    /// Sessions per second admitted from one IP (default: a quarter of --accept-rate).
    #[arg(long)]
    accept_rate_per_ip: Option<f64>,
    /// Frames queued for one connection (full: 4009 slow consumer).
    #[arg(long, default_value_t = 1_024)]
    outbound_queue: usize,
    /// Bytes queued for one connection (over: 4009 slow consumer).
    #[arg(long, default_value_t = 1 << 20)]
    outbound_bytes: usize,
    /// Bytes queued over all connections (over, beyond 64 KiB: 4009).
    #[arg(long, default_value_t = 256 << 20)]
    max_outbound_bytes: usize,
    /// Requests running at once per connection (over: rate_limited).
    #[arg(long, default_value_t = 64)]
    max_in_flight: usize,
    /// Keyed (idempotent) executions running at once, server-wide.
    #[arg(long, default_value_t = 4_096)]
    max_keyed_running: usize,
    /// Bytes the idempotency cache holds.
    #[arg(long, default_value_t = 64 << 20)]
    idempotency_max_bytes: usize,
    /// Seconds an idempotency key's outcome is kept for retries.
    #[arg(long, default_value_t = 300)]
    idempotency_retention_secs: u64,
    /// Subscriptions per connection (over: unsubscribed forbidden).
    #[arg(long, default_value_t = 1_000)]
    max_subscriptions: usize,
    /// Longest channel name in bytes (over: unsubscribed bad_request).
    #[arg(long, default_value_t = 255)]
    max_channel_len: usize,
    /// Channels the embedded broker holds (over: unsubscribed unavailable).
    #[arg(long, default_value_t = 100_000)]
    max_channels: usize,
    /// Longest publication frame in bytes (longer: refused at publish time).
    #[arg(long, default_value_t = 64 * 1024)]
    max_publication_len: usize,
    /// Trust this proxy (an address or CIDR range; repeat or comma-separate)
    /// for the client's address: X-Forwarded-For / Forwarded, or with
    /// --proxy-protocol its PROXY header.
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_delimiter = ',')]
    trusted_proxies: Vec<belay_proto::server::IpRange>,
    /// Expect a PROXY protocol header (v1 or v2, as HAProxy's `send-proxy`)
    /// from trusted proxies.
    #[arg(long)]
    proxy_protocol: bool,
    /// Require `Authorization: Bearer TOKEN` on the admin routes (without a
    /// token they answer loopback only). Also read from BELAY_ADMIN_TOKEN.
    #[arg(long, env = "BELAY_ADMIN_TOKEN", hide_env_values = true)]
    admin_token: Option<String>,
}

impl LimitArgs {
    /// Apply the flags to `config`.
    fn apply(&self, mut config: ServerConfig) -> ServerConfig {
        config
            .limits
            .set_allowed_origins(self.allowed_origins.clone())
            .set_max_frame_len(self.max_frame_len)
            .set_messages_per_sec(self.messages_per_sec)
            .set_burst(self.burst)
            .set_liveness_per_sec(self.liveness_per_sec)
            .set_liveness_burst(self.liveness_burst)
            .set_handshake_timeout(Duration::from_millis(self.handshake_timeout_ms))
            .set_max_connections_per_ip(self.max_connections_per_ip)
            .set_outbound_queue(self.outbound_queue)
            .set_outbound_bytes(self.outbound_bytes)
            .set_max_in_flight(self.max_in_flight)
            .set_max_subscriptions(self.max_subscriptions)
            .set_max_channel_len(self.max_channel_len);
        let mut history = config.history;
        history.max_channels = self.max_channels;
        let mut config = config
            .with_history(history)
            .with_upgrade_timeout(Duration::from_millis(self.upgrade_timeout_ms))
            .with_pending_upgrades(self.max_pending_upgrades, self.max_pending_upgrades_per_ip)
            .with_max_outbound_bytes(self.max_outbound_bytes)
            .with_max_keyed_running(self.max_keyed_running)
            .with_idempotency_max_bytes(self.idempotency_max_bytes)
            .with_idempotency_retention(Duration::from_secs(self.idempotency_retention_secs))
            .with_max_publication_len(self.max_publication_len)
            .with_trusted_proxies(
                belay_proto::server::TrustedProxies::new(self.trusted_proxies.clone()),
                self.proxy_protocol,
            );
        if let Some(rate) = self.accept_rate_per_ip {
            config = config.with_accept_rate_per_ip(rate);
        }
        if let Some(token) = &self.admin_token {
            config = config.with_admin_token(token.clone());
        }
        config
    }
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
    let runtime = belay_load::server_runtime::build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(serve(args))
}

async fn serve(args: &Args) -> Result<(), String> {
    // Before anything listens: a bad certificate is a startup error.
    let tls = args.tls().map_err(|e| e.to_string())?;
    let mut config = args.limits.apply(
        ServerConfig::default()
            .with_accept_rate(args.accept_rate)
            .with_expected_fleet(args.expected_clients),
    );
    config
        .limits
        .set_ping_interval(Duration::from_millis(args.ping_interval_ms))
        .set_pong_timeout(Duration::from_millis(args.pong_timeout_ms));
    config
        .drain
        .set_lb_delay(Duration::from_secs(args.lb_delay_secs))
        .set_reconnect_spread(Duration::from_millis(args.drain_spread_ms));
    let (broker, redis) = args.broker(&config).await?;
    let demo = args.demo.then(Demo::new);
    let server = match &demo {
        Some(demo) => demo.builder_on(config, broker).build(),
        None => Server::builder().broker(broker).config(config).build(),
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("no local address: {e}"))?;
    let router = match &demo {
        Some(demo) => {
            belay_demo::spawn_feed(&server, Duration::from_millis(args.feed_every_ms.max(1)));
            demo.router(&server)
        }
        None => server.router().merge(server.admin_router()),
    };
    // On Redis: `GET /admin/cluster`, and this node's answer to it.
    let router = match &redis {
        Some(redis) => router.merge(redis.cluster_router(&server)),
        None => router,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        serve: Args,
    }

    #[test]
    fn flag_defaults_are_the_library_defaults() {
        let cli = Cli::parse_from(["belay"]);
        let default = ServerConfig::default();
        let config = cli.serve.limits.apply(ServerConfig::default());
        assert_eq!(config.limits, default.limits);
        assert_eq!(config.history.max_channels, default.history.max_channels);
        assert_eq!(config.upgrade_timeout, default.upgrade_timeout);
        assert_eq!(config.max_pending_upgrades, default.max_pending_upgrades);
        assert_eq!(
            config.max_pending_upgrades_per_ip,
            default.max_pending_upgrades_per_ip
        );
        assert_eq!(config.accept_rate_per_ip, default.accept_rate_per_ip);
        assert_eq!(config.max_outbound_bytes, default.max_outbound_bytes);
        assert_eq!(config.max_keyed_running, default.max_keyed_running);
        assert_eq!(config.idempotency_max_bytes, default.idempotency_max_bytes);
        assert_eq!(config.idempotency_retention, default.idempotency_retention);
        assert_eq!(config.max_publication_len, default.max_publication_len);
        assert_eq!(config.trusted_proxies, default.trusted_proxies);
        assert!(config.admin_token.is_none() || std::env::var("BELAY_ADMIN_TOKEN").is_ok());
    }

    #[test]
    fn limit_flags_reach_the_config() {
        let cli = Cli::parse_from([
            "belay",
            "--allowed-origin",
            "https://a.example,https://b.example",
            "--max-in-flight",
            "7",
            "--trusted-proxy",
            "10.0.0.0/8",
            "--proxy-protocol",
            "--admin-token",
            "t",
            "--idempotency-retention-secs",
            "20",
        ]);
        let config = cli.serve.limits.apply(ServerConfig::default());
        assert_eq!(config.limits.allowed_origins().len(), 2);
        assert_eq!(config.limits.max_in_flight(), 7);
        assert!(config.trusted_proxies.trusts("10.1.2.3".parse().unwrap()));
        assert!(config.proxy_protocol);
        assert_eq!(config.admin_token.as_deref(), Some("t"));
        assert_eq!(config.idempotency_retention, Duration::from_secs(20));
    }
}
