//! [`Endpoint`]: where the Redis primary is — one address, whichever
//! server the Sentinels name now, or the primaries of a Redis Cluster.

use std::time::Duration;

use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, IntoConnectionInfo, PushInfo, TlsCertificates, TlsMode};

use crate::broker::ConnectError;
use crate::config::RedisConfig;

/// How the broker finds the primary. Asked again before every new
/// connection (commands, PUB/SUB), so a failover is followed on the next
/// reconnect.
pub(crate) enum Endpoint {
    /// One Redis, at the configured URL.
    Direct(redis::Client),
    /// The primary the Sentinels name for a master name (checked with
    /// `ROLE` before it is used).
    Sentinel(tokio::sync::Mutex<SentinelClient>),
    /// A Redis Cluster: its seed nodes (the slots and primaries are
    /// learnt from them, and again after `MOVED` or a lost node).
    Cluster(ClusterSeeds),
}

/// What a cluster connection is built from.
pub(crate) struct ClusterSeeds {
    urls: Vec<String>,
    tls_ca_pem: Option<Vec<u8>>,
}

impl Endpoint {
    pub(crate) fn new(config: &RedisConfig) -> Result<Endpoint, ConnectError> {
        let invalid = |e: redis::RedisError| ConnectError::InvalidUrl(e.to_string());
        let certificates = || TlsCertificates {
            client_tls: None,
            root_cert: config.tls_ca_pem.clone(),
        };
        if config.is_cluster() {
            if config.sentinel.is_some() {
                return Err(ConnectError::Unsupported(
                    "a Redis Cluster is not found through Sentinels: give either".into(),
                ));
            }
            let seeds = ClusterSeeds {
                urls: config.cluster_nodes.clone(),
                tls_ca_pem: config.tls_ca_pem.clone(),
            };
            // Checked now, so a bad URL fails at start.
            seeds
                .client(Duration::from_secs(1), None)
                .map_err(invalid)?;
            return Ok(Endpoint::Cluster(seeds));
        }
        let Some(sentinel) = &config.sentinel else {
            let client = match &config.tls_ca_pem {
                Some(_) => redis::Client::build_with_tls(config.url.as_str(), certificates()),
                None => redis::Client::open(config.url.as_str()),
            };
            return client.map(Endpoint::Direct).map_err(invalid);
        };
        if sentinel.urls.is_empty() {
            return Err(ConnectError::InvalidUrl("no Sentinel address given".into()));
        }
        let primary = config
            .url
            .as_str()
            .into_connection_info()
            .map_err(invalid)?;
        let mut addresses = Vec::with_capacity(sentinel.urls.len());
        let mut sentinel_auth = None;
        let mut sentinel_tls = false;
        for url in &sentinel.urls {
            let info = url.as_str().into_connection_info().map_err(invalid)?;
            if let (None, Some(password)) = (&sentinel_auth, info.redis_settings().password()) {
                sentinel_auth = Some((
                    info.redis_settings().username().map(str::to_owned),
                    password.to_owned(),
                ));
            }
            sentinel_tls |= matches!(info.addr(), ConnectionAddr::TcpTls { .. });
            addresses.push(info.addr().clone());
        }
        let mut builder =
            SentinelClientBuilder::new(addresses, &sentinel.master, SentinelServerType::Master)
                .map_err(invalid)?
                .set_client_to_redis_db(primary.redis_settings().db());
        if let Some(username) = primary.redis_settings().username() {
            builder = builder.set_client_to_redis_username(username);
        }
        if let Some(password) = primary.redis_settings().password() {
            builder = builder.set_client_to_redis_password(password);
        }
        if matches!(primary.addr(), ConnectionAddr::TcpTls { .. }) {
            builder = builder
                .set_client_to_redis_tls_mode(TlsMode::Secure)
                .set_client_to_redis_certificates(certificates());
        }
        if let Some((username, password)) = sentinel_auth {
            if let Some(username) = username {
                builder = builder.set_client_to_sentinel_username(username);
            }
            builder = builder.set_client_to_sentinel_password(password);
        }
        if sentinel_tls {
            builder = builder
                .set_client_to_sentinel_tls_mode(TlsMode::Secure)
                .set_client_to_sentinel_certificates(certificates());
        }
        let client = builder.build().map_err(invalid)?;
        Ok(Endpoint::Sentinel(tokio::sync::Mutex::new(client)))
    }

    /// A client for the primary as of now (for Sentinel: asked again).
    /// A cluster has no one primary: its connections come from
    /// [`ClusterSeeds::client`].
    pub(crate) async fn primary(&self) -> redis::RedisResult<redis::Client> {
        match self {
            Endpoint::Direct(client) => Ok(client.clone()),
            Endpoint::Sentinel(sentinel) => sentinel.lock().await.async_get_client().await,
            Endpoint::Cluster(_) => Err(redis::RedisError::from((
                redis::ErrorKind::Client,
                "a Redis Cluster has one primary per shard",
            ))),
        }
    }

    /// The cluster's seeds, when this is a cluster.
    pub(crate) fn cluster(&self) -> Option<&ClusterSeeds> {
        match self {
            Endpoint::Cluster(seeds) => Some(seeds),
            _ => None,
        }
    }
}

impl ClusterSeeds {
    /// A client for the cluster: each request answered within `timeout`;
    /// with `pushes`, over RESP3, delivering sharded PUB/SUB messages (and
    /// a note of every lost node connection) there.
    pub(crate) fn client(
        &self,
        timeout: Duration,
        pushes: Option<tokio::sync::mpsc::UnboundedSender<PushInfo>>,
    ) -> redis::RedisResult<ClusterClient> {
        let mut builder = ClusterClientBuilder::new(self.urls.iter().map(String::as_str))
            .connection_timeout(timeout)
            .response_timeout(timeout)
            // A lost node is retried briefly, then the caller is told
            // (and refuses `unavailable`): a failover takes seconds.
            .retries(3);
        if let Some(pem) = &self.tls_ca_pem {
            builder = builder.certs(TlsCertificates {
                client_tls: None,
                root_cert: Some(pem.clone()),
            });
        }
        if let Some(pushes) = pushes {
            builder = builder
                .use_protocol(redis::ProtocolVersion::RESP3)
                .push_sender(pushes);
        }
        builder.build()
    }
}
