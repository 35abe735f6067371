//! What `belay serve` runs, from its flags or from a config file: the
//! server's config, where it listens, TLS, the broker and the
//! authenticator.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use belay_redis::{RedisBroker, RedisConfig};
use belay_server::broker::{Broker, HistoryLimits, MemoryBroker};
use belay_server::tls::rustls;
use belay_server::{Namespaces, ServerConfig};
use belay_standalone::{BackendAuth, BrokerPlan, JwtAuthenticator, Plan, RpcProxy, Settings};

use super::flags::Args;

/// A server to start.
pub(crate) struct Setup {
    pub(crate) listen: SocketAddr,
    /// Where `/metrics` and the admin routes are served apart from the
    /// clients; `None`: on `listen`.
    pub(crate) internal_listen: Option<SocketAddr>,
    pub(crate) config: ServerConfig,
    pub(crate) tls: Option<Arc<rustls::ServerConfig>>,
    pub(crate) broker: Arc<dyn Broker>,
    /// The Redis broker again, for its cluster routes.
    pub(crate) redis: Option<RedisBroker>,
    pub(crate) auth: Option<JwtAuthenticator>,
    /// The backend's say on connects, subscribes and publishes (over
    /// `auth`); the server's authenticator when set.
    pub(crate) backend: Option<BackendAuth>,
    /// The HTTP server API's key and longest body.
    pub(crate) api: Option<(String, usize)>,
    /// Client requests forwarded to the backend.
    pub(crate) proxy: Option<RpcProxy>,
}

impl Setup {
    /// From the flags.
    pub(crate) async fn from_flags(args: &Args) -> Result<Setup, String> {
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
        let broker = match args.broker.as_str() {
            "memory" => BrokerPlan::Memory,
            url if url.starts_with("redis://") || url.starts_with("rediss://") => {
                BrokerPlan::Redis {
                    url: url.to_owned(),
                    prefix: args.redis_prefix.clone(),
                    ca_file: args.redis_ca.clone(),
                    presence_ttl: None,
                    sentinel: args
                        .redis_sentinel_master
                        .clone()
                        .map(|master| (master, args.redis_sentinels.clone())),
                    wait_replicas: (args.redis_wait_replicas, Duration::from_millis(500)),
                    cluster: args.redis_cluster.then(|| args.redis_cluster_nodes.clone()),
                }
            }
            other => {
                return Err(format!(
                    "--broker {other}: expected `memory` or a redis:// (rediss://) URL"
                ))
            }
        };
        let (broker, redis) = connect(&broker, &config.history, &config.namespaces).await?;
        Ok(Setup {
            listen: args.listen,
            internal_listen: None,
            config,
            tls,
            broker,
            redis,
            auth: None,
            backend: None,
            api: None,
            proxy: None,
        })
    }

    /// From the config file at `path` (and the environment).
    pub(crate) async fn from_file(path: &Path) -> Result<Setup, String> {
        let settings = Settings::load(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let plan =
            Plan::from_settings(&settings).map_err(|e| format!("{}: {e}", path.display()))?;
        let tls = match &plan.tls {
            Some((cert, key)) => Some(
                belay_server::tls::load_pem(cert, key)
                    .map_err(|e| format!("cannot use the TLS certificate: {e}"))?,
            ),
            None => None,
        };
        let (broker, redis) =
            connect(&plan.broker, &plan.server.history, &plan.server.namespaces).await?;
        Ok(Setup {
            listen: plan.listen,
            internal_listen: plan.internal_listen,
            config: plan.server,
            tls,
            broker,
            redis,
            auth: plan.auth,
            backend: plan.backend,
            api: plan.api,
            proxy: plan.proxy,
        })
    }
}

/// The broker `plan` names, connected.
async fn connect(
    plan: &BrokerPlan,
    history: &HistoryLimits,
    namespaces: &Namespaces,
) -> Result<(Arc<dyn Broker>, Option<RedisBroker>), String> {
    let BrokerPlan::Redis {
        url,
        prefix,
        ca_file,
        presence_ttl,
        sentinel,
        wait_replicas,
        cluster,
    } = plan
    else {
        let memory = MemoryBroker::new(*history).with_namespaces(namespaces.clone());
        return Ok((Arc::new(memory), None));
    };
    let mut redis = RedisConfig::new(url.clone())
        .prefix(prefix.clone())
        .history_len(history.max_len)
        .history_age(history.max_age)
        .history_max_bytes(history.max_bytes_per_channel)
        .namespaces(namespaces.clone());
    redis.max_channels = history.max_channels;
    if let Some(ttl) = presence_ttl {
        redis = redis.presence_ttl(*ttl);
    }
    if let Some((master, urls)) = sentinel {
        redis = redis.sentinel(master.clone(), urls.clone());
    }
    if let Some(more) = cluster {
        redis = redis.cluster(std::iter::once(url.clone()).chain(more.iter().cloned()));
    }
    if wait_replicas.0 > 0 {
        redis = redis.wait_replicas(wait_replicas.0, wait_replicas.1);
    }
    if let Some(path) = ca_file {
        let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        redis = redis.tls_ca_pem(pem);
    }
    let broker = RedisBroker::connect(redis)
        .await
        .map_err(|e| format!("broker: {e}"))?;
    Ok((Arc::new(broker.clone()), Some(broker)))
}
