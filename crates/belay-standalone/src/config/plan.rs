//! [`Plan`]: what checked settings mean for a server: its `ServerConfig`,
//! where it listens, its TLS files, its broker and its authenticator.

use belay_proto::host::HostTiming;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use belay_proto::server::{IpRange, TrustedProxies};
use belay_server::ServerConfig;

use super::Settings;
use crate::auth::{JwtAuthenticator, JwtError, MissingChannels};
use crate::proxy::{Backend, BackendAuth, BackendTls, ProxyError, RpcProxy};

/// Where the server's channels live.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BrokerPlan {
    /// The embedded broker (this process only).
    Memory,
    /// A Redis broker shared by every node on it.
    Redis {
        /// `redis://…` or `rediss://…`.
        url: String,
        /// Prefix of every key and PUB/SUB name.
        prefix: String,
        /// With `rediss://`: a PEM file of CA certificates.
        ca_file: Option<PathBuf>,
        /// How long a presence entry lives without its node refreshing it
        /// (`broker.presence_ttl_ms`); `None`: the broker's default (60 s).
        presence_ttl: Option<Duration>,
        /// `broker.sentinel_master` and `broker.sentinels`: find the
        /// primary through these Sentinels.
        sentinel: Option<(String, Vec<String>)>,
        /// `broker.wait_replicas` and `broker.wait_timeout_ms`.
        wait_replicas: (usize, Duration),
        /// `broker.cluster`: `url` is a node of a Redis Cluster; with
        /// `broker.cluster_nodes`, more nodes to learn it from.
        cluster: Option<Vec<String>>,
    },
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogFormat {
    /// One line each, coloured only on a terminal.
    Text,
    /// One JSON object per line.
    Json,
}

/// What the server logs beyond its lines (`[log]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LogPlan {
    /// How lines are written (`log.format`).
    pub format: LogFormat,
    /// How often the summary line is written (`log.summary_secs`); `None`:
    /// never.
    pub summary_every: Option<Duration>,
}

impl LogPlan {
    /// `format`, with a summary `every` so often (`None`: never).
    pub fn new(format: LogFormat, every: Option<Duration>) -> Self {
        LogPlan {
            format,
            summary_every: every,
        }
    }
}

/// A server to run, as the settings describe it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// Where to listen.
    pub listen: SocketAddr,
    /// Where to serve `/metrics` and the admin routes apart from the
    /// clients (`server.internal_listen`); `None`: on `listen`.
    pub internal_listen: Option<SocketAddr>,
    /// Every server option.
    pub server: ServerConfig,
    /// PEM certificate chain and key, for wss://.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Where channels live.
    pub broker: BrokerPlan,
    /// JWT connection auth (`auth.mode = "jwt"`); `None`: everyone is
    /// anonymous.
    pub auth: Option<JwtAuthenticator>,
    /// The backend's say on connects (`auth.mode = "proxy"`), subscribes
    /// and client publishes (namespaces with `backend`), over `auth`'s
    /// decisions; `None`: no proxy URL is set. When set, it is the
    /// server's authenticator.
    pub backend: Option<BackendAuth>,
    /// The HTTP server API: its key and longest body; `None`: no API.
    pub api: Option<(String, usize)>,
    /// How the server logs.
    pub log: LogPlan,
    /// Client requests forwarded to the backend; `None`: no methods.
    pub proxy: Option<RpcProxy>,
}

/// Why checked settings do not make a server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The JWT key or secret is not usable.
    #[error("auth: {0}")]
    Jwt(#[from] JwtError),
    /// The proxy's URL is not usable.
    #[error("proxy: {0}")]
    Proxy(#[from] ProxyError),
    /// A key file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl Plan {
    /// The server `settings` describe.
    pub fn from_settings(s: &Settings) -> Result<Plan, PlanError> {
        let listen = s
            .text("server.listen")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080)));
        let auth = jwt(s)?;
        let tls = backend_tls(s)?;
        let backend = backend(s, auth.clone(), &tls)?;
        Ok(Plan {
            listen,
            internal_listen: s
                .text("server.internal_listen")
                .and_then(|a| a.parse().ok()),
            server: server_config(s),
            tls: match (s.text("tls.cert"), s.text("tls.key")) {
                (Some(cert), Some(key)) => Some((cert.into(), key.into())),
                _ => None,
            },
            broker: broker(s),
            auth,
            backend,
            api: s
                .text("api.key")
                .map(|key| (key.to_owned(), s.size("api.max_body_bytes"))),
            log: LogPlan::new(
                match s.text("log.format") {
                    Some("json") => LogFormat::Json,
                    _ => LogFormat::Text,
                },
                Some(s.uint("log.summary_secs"))
                    .filter(|secs| *secs > 0)
                    .map(Duration::from_secs),
            ),
            proxy: match s.text("proxy.rpc_url") {
                Some(url) => Some(
                    RpcProxy::with_tls(
                        url,
                        millis(s, "proxy.timeout_ms"),
                        s.size("proxy.max_in_flight"),
                        &tls,
                    )?
                    .with_max_response_bytes(s.size("proxy.max_response_bytes")),
                ),
                None => None,
            },
        })
    }
}

fn millis(s: &Settings, path: &str) -> Duration {
    Duration::from_millis(s.uint(path))
}

fn server_config(s: &Settings) -> ServerConfig {
    let mut config = ServerConfig::default()
        .with_accept_rate(s.float("server.accept_rate").unwrap_or(500.0))
        .with_expected_fleet(s.size("server.expected_clients"));
    config
        .limits
        .set_ping_interval(millis(s, "heartbeat.ping_interval_ms"))
        .set_pong_timeout(millis(s, "heartbeat.pong_timeout_ms"))
        .set_allowed_origins(s.list("limits.allowed_origins").to_vec())
        .set_max_frame_len(s.size("limits.max_frame_len"))
        .set_messages_per_sec(s.float("limits.messages_per_sec").unwrap_or(100.0))
        .set_burst(u32::try_from(s.int("limits.burst")).unwrap_or(200))
        .set_liveness_per_sec(s.float("limits.liveness_per_sec").unwrap_or(10.0))
        .set_liveness_burst(u32::try_from(s.int("limits.liveness_burst")).unwrap_or(50))
        .set_handshake_timeout(millis(s, "limits.handshake_timeout_ms"))
        .set_max_connections_per_ip(
            u32::try_from(s.int("limits.max_connections_per_ip")).unwrap_or(1_000),
        )
        .set_outbound_queue(s.size("limits.outbound_queue"))
        .set_outbound_bytes(s.size("limits.outbound_bytes"))
        .set_max_in_flight(s.size("limits.max_in_flight"))
        .set_max_subscriptions(s.size("limits.max_subscriptions"))
        .set_max_channel_len(s.size("limits.max_channel_len"));
    config
        .drain
        .set_lb_delay(Duration::from_secs(s.uint("drain.lb_delay_secs")))
        .set_reconnect_spread(millis(s, "drain.spread_ms"));
    config = config.with_namespaces(s.namespaces());
    let mut history = config.history;
    history.max_len = s.size("history.max_len");
    history.max_age = Duration::from_secs(s.uint("history.max_age_secs"));
    history.max_channels = s.size("history.max_channels");
    history.max_bytes_per_channel = s.size("history.max_bytes_per_channel");
    history.max_bytes = s.size("history.max_bytes");
    let ranges: Vec<IpRange> = s
        .list("network.trusted_proxies")
        .iter()
        .filter_map(|r| r.parse().ok())
        .collect();
    let mut config = config
        .with_history(history)
        .with_upgrade_timeout(millis(s, "limits.upgrade_timeout_ms"))
        .with_body_timeout(millis(s, "limits.body_timeout_ms"))
        .with_pending_upgrades(
            u32::try_from(s.int("limits.max_pending_upgrades")).unwrap_or(2_048),
            u32::try_from(s.int("limits.max_pending_upgrades_per_ip")).unwrap_or(64),
        )
        .with_work_share_per_ip(
            s.int("limits.work_rate_per_ip") as f64,
            u32::try_from(s.int("limits.work_burst_per_ip")).unwrap_or(500),
        )
        .with_max_outbound_bytes(s.size("limits.max_outbound_bytes"))
        .with_max_keyed_running(s.size("idempotency.max_keyed_running"))
        .with_idempotency_max_bytes(s.size("idempotency.max_bytes"))
        .with_idempotency_retention(Duration::from_secs(s.uint("idempotency.retention_secs")))
        .with_max_publication_len(s.size("limits.max_publication_len"))
        .with_host_timing(
            HostTiming::default()
                .with_heartbeat_interval(millis(s, "hosts.heartbeat_interval_ms"))
                .with_connect_allowance(millis(s, "hosts.connect_allowance_ms"))
                .with_grace(millis(s, "hosts.grace_ms")),
        )
        .with_host_limits(
            s.size("hosts.max_hosts"),
            s.size("hosts.max_calls_per_host"),
        )
        .with_trusted_proxies(
            TrustedProxies::new(ranges),
            s.flag("network.proxy_protocol"),
        );
    if let Some(rate) = s.float("server.accept_rate_per_ip") {
        config = config.with_accept_rate_per_ip(rate);
    }
    if let Some(token) = s.text("server.admin_token") {
        config = config.with_admin_token(token.to_owned());
    }
    config
}

fn broker(s: &Settings) -> BrokerPlan {
    match s.text("broker.url") {
        Some(url) if url != "memory" => BrokerPlan::Redis {
            url: url.to_owned(),
            prefix: s.text("broker.redis_prefix").unwrap_or("belay").to_owned(),
            ca_file: s.text("broker.redis_ca").map(PathBuf::from),
            presence_ttl: Some(millis(s, "broker.presence_ttl_ms")),
            sentinel: s
                .text("broker.sentinel_master")
                .map(|master| (master.to_owned(), s.list("broker.sentinels").to_vec())),
            wait_replicas: (
                usize::try_from(s.int("broker.wait_replicas")).unwrap_or(0),
                millis(s, "broker.wait_timeout_ms"),
            ),
            cluster: s
                .flag("broker.cluster")
                .then(|| s.list("broker.cluster_nodes").to_vec()),
        },
        _ => BrokerPlan::Memory,
    }
}

/// How the proxies check an `https://` backend: `proxy.ca`'s
/// certificates, else the Mozilla roots.
fn backend_tls(s: &Settings) -> Result<BackendTls, PlanError> {
    let Some(path) = s.text("proxy.ca") else {
        return Ok(BackendTls::default());
    };
    let path = PathBuf::from(path);
    let pem = std::fs::read(&path).map_err(|source| PlanError::Read { path, source })?;
    Ok(BackendTls::from_ca_pem(&pem)?)
}

/// The backend's say, if a connect, subscribe or publish URL is set.
fn backend(
    s: &Settings,
    jwt: Option<JwtAuthenticator>,
    tls: &BackendTls,
) -> Result<Option<BackendAuth>, PlanError> {
    let url = |path| {
        s.text(path)
            .map(|url| {
                Backend::with_tls(
                    url,
                    millis(s, "proxy.timeout_ms"),
                    s.size("proxy.max_in_flight"),
                    tls,
                )
                .map(|b| b.with_max_response_bytes(s.size("proxy.max_response_bytes")))
            })
            .transpose()
    };
    let (connect, subscribe, publish) = (
        url("proxy.connect_url")?.filter(|_| s.text("auth.mode") == Some("proxy")),
        url("proxy.subscribe_url")?,
        url("proxy.publish_url")?,
    );
    if connect.is_none() && subscribe.is_none() && publish.is_none() {
        return Ok(None);
    }
    let mut auth = match jwt {
        Some(jwt) => BackendAuth::new(jwt),
        None => BackendAuth::default(),
    };
    if let Some(backend) = connect {
        auth = auth.connect_through(backend);
    }
    if let Some(backend) = subscribe {
        auth = auth.subscribe_through(backend);
    }
    if let Some(backend) = publish {
        auth = auth.publish_through(backend);
    }
    Ok(Some(auth))
}

fn jwt(s: &Settings) -> Result<Option<JwtAuthenticator>, PlanError> {
    if s.text("auth.mode") != Some("jwt") {
        return Ok(None);
    }
    let algorithm = s.text("auth.jwt_algorithm").unwrap_or("HS256");
    let mut auth = if algorithm == "HS256" {
        JwtAuthenticator::hs256(s.text("auth.jwt_secret").unwrap_or_default().as_bytes())?
    } else {
        let path = PathBuf::from(s.text("auth.jwt_public_key").unwrap_or_default());
        let pem = std::fs::read(&path).map_err(|source| PlanError::Read { path, source })?;
        JwtAuthenticator::new(algorithm, &pem)?
    };
    if let Some(audience) = s.text("auth.jwt_audience") {
        auth = auth.audience(audience);
    }
    if let Some(issuer) = s.text("auth.jwt_issuer") {
        auth = auth.issuer(issuer);
    }
    if s.text("auth.jwt_missing_channels") == Some("any") {
        auth = auth.missing_channels(MissingChannels::Any);
    }
    Ok(Some(auth.leeway(Duration::from_secs(
        s.uint("auth.jwt_leeway_secs"),
    ))))
}
