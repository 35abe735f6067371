//! The flags of `belay serve` (every setting also has a config-file key:
//! `belay config defaults`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use belay_server::ServerConfig;
use belay_standalone::{LogFormat, LogPlan};

/// Arguments of `belay serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// Serve the demo app: `feed` ticks every 500 ms, `echo`/`order.create`/`slow`
    /// methods, and the fault panel page at `/`.
    #[arg(long)]
    pub(crate) demo: bool,
    /// Sessions admitted per second.
    #[arg(long, default_value_t = 500.0)]
    pub(crate) accept_rate: f64,
    /// Server ping interval in milliseconds (advertised in `welcome`). With
    /// the pong timeout, a silent death is noticed within 16 s at both ends
    /// at the defaults (--demo: 1 s each).
    #[arg(long, default_value_t = 8_000)]
    pub(crate) ping_interval_ms: u64,
    /// Milliseconds without any frame after a ping before the connection is
    /// reaped as a zombie.
    #[arg(long, default_value_t = 8_000)]
    pub(crate) pong_timeout_ms: u64,
    /// With --demo: milliseconds between two `feed` ticks.
    #[arg(long, default_value_t = 500)]
    pub(crate) feed_every_ms: u64,
    /// The fleet this server expects: reconnect pacing periods are sized for
    /// at least this many clients.
    #[arg(long, default_value_t = 0)]
    pub(crate) expected_clients: usize,
    /// Seconds the load balancer needs to notice `/readyz` = 503 during a drain.
    #[arg(long, default_value_t = 25)]
    pub(crate) lb_delay_secs: u64,
    /// Milliseconds a drain spreads the clients' reconnects over.
    #[arg(long, default_value_t = 10_000)]
    pub(crate) drain_spread_ms: u64,
    /// Serve wss:// (TLS) with this PEM certificate chain, leaf first
    /// (requires --tls-key).
    #[arg(long, value_name = "FILE")]
    pub(crate) tls_cert: Option<PathBuf>,
    /// The PEM private key (PKCS#8, PKCS#1 or SEC1) of --tls-cert.
    #[arg(long, value_name = "FILE")]
    pub(crate) tls_key: Option<PathBuf>,
    /// Where channels live: `memory` (this process only) or a Redis URL,
    /// `redis://[user[:password]@]host:port[/db]` (`rediss://` for TLS),
    /// shared by every node on it.
    #[arg(long, default_value = "memory", value_name = "URL")]
    pub(crate) broker: String,
    /// With a Redis broker: the prefix of every key and PUB/SUB name.
    #[arg(long, default_value = "belay")]
    pub(crate) redis_prefix: String,
    /// With `rediss://`: the PEM CA certificates Redis's certificate must
    /// chain to (default: the system's trusted roots).
    #[arg(long, value_name = "FILE")]
    pub(crate) redis_ca: Option<PathBuf>,
    /// Find the Redis primary through this Sentinel
    /// (`redis://[:password@]host:port`; repeat for each); --broker then
    /// gives only the primary's scheme, user, password and database.
    #[arg(
        long = "redis-sentinel",
        value_name = "URL",
        requires = "redis_sentinel_master"
    )]
    pub(crate) redis_sentinels: Vec<String>,
    /// With --redis-sentinel: the master name the Sentinels watch.
    #[arg(long, value_name = "NAME", requires = "redis_sentinels")]
    pub(crate) redis_sentinel_master: Option<String>,
    /// --broker is a node of a Redis Cluster (Redis 7): the rest of the
    /// cluster is learnt from it; channels spread over its shards.
    #[arg(long, conflicts_with = "redis_sentinels")]
    pub(crate) redis_cluster: bool,
    /// With --redis-cluster: another node to learn the cluster from, should
    /// --broker's be down at start (repeat for each).
    #[arg(
        long = "redis-cluster-node",
        value_name = "URL",
        requires = "redis_cluster"
    )]
    pub(crate) redis_cluster_nodes: Vec<String>,
    /// With Redis: acknowledge a publication (and send it live) only once
    /// this many replicas have it (Redis `WAIT`, at most 500 ms).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub(crate) redis_wait_replicas: usize,
    /// Take every setting from this TOML file (`belay config defaults`
    /// prints one with every default; `belay config check FILE` checks one)
    /// instead of these flags; only --demo, --feed-every-ms and the
    /// benchmarking flags combine with it.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// How log lines are written to stderr: `text` (coloured only on a
    /// terminal) or `json` (one object per line). The level is `RUST_LOG`
    /// (default `info`; per-connection lines are at `debug`).
    #[arg(long, value_enum, default_value_t = LogFormatArg::Text)]
    pub(crate) log_format: LogFormatArg,
    /// Seconds between two `info` summaries of what happened (written only
    /// when something changed); 0: none.
    #[arg(long, default_value_t = 60)]
    pub(crate) log_summary_secs: u64,
    #[command(flatten)]
    pub(crate) limits: LimitArgs,
    #[command(flatten)]
    pub(crate) bench: BenchArgs,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormatArg {
    /// One line each.
    Text,
    /// One JSON object per line.
    Json,
}

impl Args {
    /// How to log, from the flags.
    pub(crate) fn log_plan(&self) -> LogPlan {
        let format = match self.log_format {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        };
        let every = (self.log_summary_secs > 0).then(|| Duration::from_secs(self.log_summary_secs));
        LogPlan::new(format, every)
    }
}

/// Settings for benchmarks: a known CPU budget and an injected handshake
/// cost (they combine with --config).
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Benchmarking")]
pub(crate) struct BenchArgs {
    /// Worker threads of the server's runtime (default: one per CPU), so a
    /// benchmark knows the CPU budget (the accept loop, every connection
    /// and the injected costs share them).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) worker_threads: Option<u16>,
    /// Microseconds of CPU burnt (a busy loop on the worker, not a sleep)
    /// for every WebSocket upgrade request and every `POST /sse`, before
    /// the upgrade checks and admission: a stand-in for a TLS handshake.
    /// Refused attempts pay it too; connections refused at the TCP accept
    /// (per-IP and pending-upgrade limits) do not. Counters at
    /// `GET /metrics/injected-cost`.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub(crate) handshake_cost_us: u64,
    /// Microseconds of CPU burnt more for each session admitted (its
    /// authentication, its first state).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub(crate) session_cost_us: u64,
}

impl BenchArgs {
    /// The injected costs.
    pub(crate) fn cost(&self) -> belay_demo::cost::InjectedCost {
        belay_demo::cost::InjectedCost::new(
            Duration::from_micros(self.handshake_cost_us),
            Duration::from_micros(self.session_cost_us),
        )
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
    pub(crate) allowed_origins: Vec<String>,
    /// Longest inbound frame in bytes (close 1009 above it).
    #[arg(long, default_value_t = 64 * 1024)]
    pub(crate) max_frame_len: usize,
    /// Data frames per second per connection (over: rate_limited; a flood: 4029).
    #[arg(long, default_value_t = 100.0)]
    pub(crate) messages_per_sec: f64,
    /// Data frames a connection may send at once.
    #[arg(long, default_value_t = 200)]
    pub(crate) burst: u32,
    /// Liveness frames (pings, pongs) per second per connection, apart from data.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) liveness_per_sec: f64,
    /// Liveness frames at once (more refused than this: 4029 ping flood).
    #[arg(long, default_value_t = 50)]
    pub(crate) liveness_burst: u32,
    /// Milliseconds from the upgrade to `connect` (close 4008 after it).
    #[arg(long, default_value_t = 10_000)]
    pub(crate) handshake_timeout_ms: u64,
    /// Milliseconds a new TCP connection has for its PROXY header, TLS and
    /// request headers.
    #[arg(long, default_value_t = 5_000)]
    pub(crate) upgrade_timeout_ms: u64,
    /// Milliseconds a POST body (SSE open, send, close; the HTTP API) has to
    /// arrive in full (408 and the connection closed after it).
    #[arg(long, default_value_t = 5_000)]
    pub(crate) body_timeout_ms: u64,
    /// Connections (upgraded or not) from one IP (an IPv6 /64): 429 above it.
    #[arg(long, default_value_t = 1_000)]
    pub(crate) max_connections_per_ip: u32,
    /// TCP connections not yet upgraded, from all sources: 503 above it.
    #[arg(long, default_value_t = 2_048)]
    pub(crate) max_pending_upgrades: u32,
    /// TCP connections not yet upgraded from one IP: 503 above it.
    #[arg(long, default_value_t = 64)]
    pub(crate) max_pending_upgrades_per_ip: u32,
    /// Sessions per second admitted from one IP (default: a quarter of --accept-rate).
    #[arg(long)]
    pub(crate) accept_rate_per_ip: Option<f64>,
    /// Work units per second one IP's frames may take (1 per frame, 1 more
    /// per 256 B): past it its connections are read more slowly, nothing is
    /// refused. 0: no share (a load generator on one address).
    #[arg(long, default_value_t = 8_000.0)]
    pub(crate) work_rate_per_ip: f64,
    /// Work units one IP may take at once before its frames are paced.
    #[arg(long, default_value_t = 500)]
    pub(crate) work_burst_per_ip: u32,
    /// Frames queued for one connection (full: 4009 slow consumer); a
    /// resume replays at most half of what is free (more: recovered false).
    #[arg(long, default_value_t = 1_024)]
    pub(crate) outbound_queue: usize,
    /// Bytes queued for one connection (over: 4009 slow consumer); a
    /// resume replays at most half of what is free (more: recovered false).
    #[arg(long, default_value_t = 1 << 20)]
    pub(crate) outbound_bytes: usize,
    /// Bytes queued over all connections (over, beyond 64 KiB: 4009).
    #[arg(long, default_value_t = 256 << 20)]
    pub(crate) max_outbound_bytes: usize,
    /// Requests running at once per connection (over: rate_limited).
    #[arg(long, default_value_t = 64)]
    pub(crate) max_in_flight: usize,
    /// Keyed (idempotent) executions running at once, server-wide.
    #[arg(long, default_value_t = 4_096)]
    pub(crate) max_keyed_running: usize,
    /// Bytes the idempotency cache holds.
    #[arg(long, default_value_t = 64 << 20)]
    pub(crate) idempotency_max_bytes: usize,
    /// Seconds an idempotency key's outcome is kept for retries.
    #[arg(long, default_value_t = 300)]
    pub(crate) idempotency_retention_secs: u64,
    /// Subscriptions per connection (over: unsubscribed forbidden).
    #[arg(long, default_value_t = 1_000)]
    pub(crate) max_subscriptions: usize,
    /// Longest channel name in bytes (over: unsubscribed bad_request).
    #[arg(long, default_value_t = 255)]
    pub(crate) max_channel_len: usize,
    /// Channels the embedded broker holds (over: unsubscribed unavailable).
    #[arg(long, default_value_t = 100_000)]
    pub(crate) max_channels: usize,
    /// Bytes of history one channel keeps (the oldest go first; with Redis,
    /// bytes of data in its Stream).
    #[arg(long, default_value_t = 4 << 20)]
    pub(crate) history_max_bytes_per_channel: usize,
    /// Bytes of history the embedded broker keeps over all channels (the
    /// oldest go first, whichever channel).
    #[arg(long, default_value_t = 256 << 20)]
    pub(crate) history_max_bytes: usize,
    /// Longest publication frame in bytes (longer: refused at publish time).
    #[arg(long, default_value_t = 64 * 1024)]
    pub(crate) max_publication_len: usize,
    /// Trust this proxy (an address or CIDR range; repeat or comma-separate)
    /// for the client's address: X-Forwarded-For / Forwarded, or with
    /// --proxy-protocol its PROXY header.
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_delimiter = ',')]
    pub(crate) trusted_proxies: Vec<belay_proto::server::IpRange>,
    /// Expect a PROXY protocol header (v1 or v2, as HAProxy's `send-proxy`)
    /// from trusted proxies.
    #[arg(long)]
    pub(crate) proxy_protocol: bool,
    /// Require `Authorization: Bearer TOKEN` on the admin routes (without a
    /// token they answer loopback only). Also read from BELAY_ADMIN_TOKEN.
    #[arg(long, env = "BELAY_ADMIN_TOKEN", hide_env_values = true)]
    pub(crate) admin_token: Option<String>,
}

impl LimitArgs {
    /// Apply the flags to `config`.
    pub(crate) fn apply(&self, mut config: ServerConfig) -> ServerConfig {
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
        history.max_bytes_per_channel = self.history_max_bytes_per_channel;
        history.max_bytes = self.history_max_bytes;
        let mut config = config
            .with_history(history)
            .with_upgrade_timeout(Duration::from_millis(self.upgrade_timeout_ms))
            .with_body_timeout(Duration::from_millis(self.body_timeout_ms))
            .with_pending_upgrades(self.max_pending_upgrades, self.max_pending_upgrades_per_ip)
            .with_work_share_per_ip(self.work_rate_per_ip, self.work_burst_per_ip)
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
pub(crate) enum TlsFlagsError {
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
    pub(crate) fn tls(
        &self,
    ) -> Result<Option<Arc<belay_server::tls::rustls::ServerConfig>>, TlsFlagsError> {
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
        assert_eq!(config.body_timeout, default.body_timeout);
        assert_eq!(
            config.history.max_bytes_per_channel,
            default.history.max_bytes_per_channel
        );
        assert_eq!(config.history.max_bytes, default.history.max_bytes);
        assert_eq!(config.max_pending_upgrades, default.max_pending_upgrades);
        assert_eq!(
            config.max_pending_upgrades_per_ip,
            default.max_pending_upgrades_per_ip
        );
        assert_eq!(config.accept_rate_per_ip, default.accept_rate_per_ip);
        assert_eq!(config.work_rate_per_ip, default.work_rate_per_ip);
        assert_eq!(config.work_burst_per_ip, default.work_burst_per_ip);
        assert_eq!(config.max_outbound_bytes, default.max_outbound_bytes);
        assert_eq!(config.max_keyed_running, default.max_keyed_running);
        assert_eq!(config.idempotency_max_bytes, default.idempotency_max_bytes);
        assert_eq!(config.idempotency_retention, default.idempotency_retention);
        assert_eq!(config.max_publication_len, default.max_publication_len);
        assert_eq!(config.trusted_proxies, default.trusted_proxies);
        assert!(config.admin_token.is_none() || std::env::var("BELAY_ADMIN_TOKEN").is_ok());
    }

    #[test]
    fn bench_flags_parse_and_default_to_nothing() {
        let cli = Cli::parse_from(["belay"]);
        assert_eq!(cli.serve.bench.worker_threads, None);
        assert!(cli.serve.bench.cost().is_zero());
        let cli = Cli::parse_from([
            "belay",
            "--worker-threads",
            "1",
            "--handshake-cost-us",
            "800",
            "--session-cost-us",
            "50",
        ]);
        assert_eq!(cli.serve.bench.worker_threads, Some(1));
        assert!(!cli.serve.bench.cost().is_zero());
        assert!(Cli::try_parse_from(["belay", "--worker-threads", "0"]).is_err());
        assert!(Cli::try_parse_from(["belay", "--handshake-cost-us", "2000000"]).is_err());
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
