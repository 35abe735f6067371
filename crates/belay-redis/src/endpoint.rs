//! [`Endpoint`]: where the Redis primary is — one address, or whichever
//! server the Sentinels name now.

use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, IntoConnectionInfo, TlsCertificates, TlsMode};

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
}

impl Endpoint {
    pub(crate) fn new(config: &RedisConfig) -> Result<Endpoint, ConnectError> {
        let invalid = |e: redis::RedisError| ConnectError::InvalidUrl(e.to_string());
        let certificates = || TlsCertificates {
            client_tls: None,
            root_cert: config.tls_ca_pem.clone(),
        };
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
    pub(crate) async fn primary(&self) -> redis::RedisResult<redis::Client> {
        match self {
            Endpoint::Direct(client) => Ok(client.clone()),
            Endpoint::Sentinel(sentinel) => sentinel.lock().await.async_get_client().await,
        }
    }
}
