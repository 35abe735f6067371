//! [`ClientBuilder`]: the server URL, the core's configuration, credentials
//! and their providers, TLS trust, the fallback and the codec; `connect`
//! checks them and starts the driver.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, RandomState};
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use belay_proto::host::HostTiming;
use belay_proto::message::Codec;
use belay_proto::{Config, Session, TokenError};
use tokio::sync::{broadcast, mpsc, watch};

use crate::driver::{self, Driver, Outlets};
use crate::endpoints::Endpoints;
use crate::{transport, BuildError, Client, Status, TlsSettings};

/// What a token provider's call returns: the token, or why there is none.
pub type TokenFuture = Pin<Box<dyn Future<Output = Result<String, TokenError>> + Send>>;

/// Where tokens come from ([`ClientBuilder::token_provider`]).
pub type TokenProvider = Arc<dyn Fn() -> TokenFuture + Send + Sync>;

/// Where subscription tokens come from, by channel
/// ([`ClientBuilder::subscription_token_provider`]).
pub type SubscriptionTokenProvider = Arc<dyn Fn(String) -> TokenFuture + Send + Sync>;

/// How many lifecycle events a slow [`Client::events`] receiver may fall behind.
const EVENT_CAPACITY: usize = 256;

/// Builds a [`Client`]: the server URL, the core's [`Config`], credentials
/// and TLS trust.
#[must_use]
#[derive(Clone)]
pub struct ClientBuilder {
    url: String,
    failover_urls: Vec<String>,
    local_address: Option<IpAddr>,
    config: Config,
    token: Option<String>,
    token_provider: Option<TokenProvider>,
    subscription_tokens: Option<SubscriptionTokenProvider>,
    tls: TlsSettings,
    seed: Option<u64>,
    fallback: Option<belay_proto::FallbackConfig>,
    codec: Codec,
    /// The relay's timing, if set: the host call deadline is computed from
    /// it and the final config's request timeout when the client is built,
    /// so it does not matter which of the two setters came first.
    host_timing: Option<HostTiming>,
    /// [`ClientBuilder::configure`]'s changes, applied in order to the
    /// [`ClientBuilder::config`] base when the client is built, so a later
    /// `config` never discards them.
    changes: Vec<ConfigChange>,
}

/// A change [`ClientBuilder::configure`] records.
type ConfigChange = Arc<dyn Fn(&mut Config) + Send + Sync>;

impl fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("url", &self.url)
            .field("failover_urls", &self.failover_urls)
            .field("local_address", &self.local_address)
            .field("config", &self.config)
            .field("token", &self.token.as_ref().map(|_| "<token>"))
            .field(
                "token_provider",
                &self.token_provider.as_ref().map(|_| "<provider>"),
            )
            .field("tls", &self.tls)
            .finish()
    }
}

impl ClientBuilder {
    pub(crate) fn new(url: String) -> Self {
        ClientBuilder {
            url,
            failover_urls: Vec::new(),
            local_address: None,
            config: Config::default(),
            token: None,
            token_provider: None,
            subscription_tokens: None,
            tls: TlsSettings::default(),
            seed: None,
            fallback: Some(belay_proto::FallbackConfig::default()),
            codec: Codec::Json,
            host_timing: None,
            changes: Vec::new(),
        }
    }

    /// The core's base configuration (policies, heartbeat, timeouts),
    /// replacing an earlier `config`. The `connect_timeout` bounds the TCP,
    /// TLS and WebSocket handshakes and then, separately, the wait for
    /// `welcome`. [`configure`](Self::configure)'s changes apply on top of
    /// it whichever comes first.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Change the core's configuration: the changes are applied, in the
    /// order given, to the [`config`](Self::config) base when the client
    /// is built, so the setters' order does not matter.
    ///
    /// ```
    /// use std::time::Duration;
    /// use belay_client::Client;
    /// use belay_proto::Config;
    ///
    /// let mut base = Config::default();
    /// base.set_connect_timeout(Duration::from_secs(3));
    /// let shorter = |c: &mut Config| {
    ///     c.set_request_timeout(Duration::from_secs(2));
    /// };
    /// let a = Client::builder("ws://127.0.0.1:1/ws").config(base.clone()).configure(shorter);
    /// let b = Client::builder("ws://127.0.0.1:1/ws").configure(shorter).config(base);
    /// assert_eq!(a.resolved_config(), b.resolved_config());
    /// assert_eq!(a.resolved_config().request_timeout(), Duration::from_secs(2));
    /// assert_eq!(a.resolved_config().connect_timeout(), Duration::from_secs(3));
    /// ```
    pub fn configure(mut self, change: impl Fn(&mut Config) + Send + Sync + 'static) -> Self {
        self.changes.push(Arc::new(change));
        self
    }

    /// The core's configuration the client will be built with: the
    /// [`config`](Self::config) base with every
    /// [`configure`](Self::configure) change applied.
    pub fn resolved_config(&self) -> Config {
        let mut config = self.config.clone();
        for change in &self.changes {
            change(&mut config);
        }
        if let Some(token) = &self.token {
            config.set_token(Some(token.clone()));
        }
        config.set_token_provider(self.token_provider.is_some());
        config
    }

    /// [`Client::call_host`]'s deadline the client will be built with:
    /// the relay's wake bound ([`host_timing`](Self::host_timing), default
    /// [`HostTiming::default`]) plus the resolved config's request timeout.
    pub fn resolved_host_call_timeout(&self) -> Duration {
        let request_timeout = self.resolved_config().request_timeout();
        self.host_timing
            .clone()
            .unwrap_or_default()
            .call_deadline(request_timeout)
    }

    /// Another server of the same service, dialed in turn: the first dial
    /// goes to the builder's URL, and each redial after a loss or a failed
    /// dial goes to the next URL in the list (the builder's, then each
    /// failover URL in the order added, round again). Subscriptions resume
    /// from their positions on whichever server answers, which recovers
    /// them when the servers share a broker. The backoff paces the redials
    /// as with one URL. Checked by [`connect`](Self::connect) like the first.
    ///
    /// ```
    /// use belay_client::Client;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let client = Client::builder("ws://10.0.0.1:8080/ws")
    ///     .failover_url("ws://10.0.0.2:8080/ws")
    ///     .connect()
    ///     .expect("usable URLs");
    /// client.close().await;
    /// # }
    /// ```
    pub fn failover_url(mut self, url: impl Into<String>) -> Self {
        self.failover_urls.push(url.into());
        self
    }

    /// Connect from this local address (the port is the system's choice),
    /// as a host with several addresses would pick its interface. Default:
    /// the system's choice. A dial from an address this host does not
    /// have fails, and is retried as any failed dial.
    pub fn local_address(mut self, address: IpAddr) -> Self {
        self.local_address = Some(address);
        self
    }

    /// The token `connect` carries, for a client whose token does not
    /// change (a server refusing it halts with `AuthFailed`). With a
    /// [`token_provider`](Self::token_provider) too, it is the first
    /// token, replaced by the provider's once it is refused or near its
    /// expiry.
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Where tokens come from (spec/PROTOCOL.md §2.8). The provider is
    /// called, in a task of its own so that a fetch never holds up the
    /// connection, before a dial when there is no token, the server
    /// refused the last one, or it is near its expiry; and on the open
    /// session at 75–90 % of the token's lifetime (the new token is sent
    /// in-band with `refresh`, without reconnecting). A call that takes
    /// longer than the config's `connect_timeout` counts as
    /// [`TokenError::Unavailable`].
    ///
    /// [`TokenError::Unavailable`] (the backend is down, the device
    /// offline) is retried with the backoff and never halts the client;
    /// [`TokenError::Unauthorized`] halts it with `AuthFailed`, as does
    /// the server refusing a token the provider has just given.
    ///
    /// ```no_run
    /// use belay_client::{Client, TokenError};
    ///
    /// # async fn fetch_token() -> Result<Option<String>, std::io::Error> { Ok(Some("t".into())) }
    /// # async fn run() {
    /// let client = Client::builder("wss://example.com/ws")
    ///     .token_provider(|| async {
    ///         match fetch_token().await {
    ///             Ok(Some(token)) => Ok(token),
    ///             // The backend says this user is signed out: stop.
    ///             Ok(None) => Err(TokenError::Unauthorized),
    ///             // The backend is unreachable: asked again after the backoff.
    ///             Err(_) => Err(TokenError::Unavailable),
    ///         }
    ///     })
    ///     .connect()
    ///     .expect("a usable URL");
    /// # let _ = client;
    /// # }
    /// ```
    pub fn token_provider<F, Fut>(mut self, provider: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, TokenError>> + Send + 'static,
    {
        self.token_provider = Some(Arc::new(move || -> TokenFuture { Box::pin(provider()) }));
        self
    }

    /// Where new subscription tokens come from (spec/PROTOCOL.md §5.8):
    /// when the server says a channel's subscription token expires
    /// (`sub_expiring`), the provider is called with the channel's name at
    /// 75–90 % of what is left, in a task of its own, and its token is sent
    /// as `sub_refresh` without leaving the channel (and with every later
    /// subscribe of it). A failure leaves the token to expire: the server
    /// ends the subscription (`unsubscribed` `expired`) and the channel is
    /// subscribed again with the token it has.
    ///
    /// ```no_run
    /// use belay_client::{Client, TokenError};
    ///
    /// # async fn issue(channel: &str) -> Option<String> { Some(format!("token-for-{channel}")) }
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let client = Client::builder("wss://example.com/ws")
    ///     .subscription_token_provider(|channel| async move {
    ///         issue(&channel).await.ok_or(TokenError::Unauthorized)
    ///     })
    ///     .connect()?;
    /// let first = issue("private:room").await.unwrap_or_default();
    /// let room = client.subscribe_with_token("private:room", &first).await?;
    /// # drop(room);
    /// # Ok(())
    /// # }
    /// ```
    pub fn subscription_token_provider<F, Fut>(mut self, provider: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<String, TokenError>> + Send + 'static,
    {
        self.subscription_tokens = Some(Arc::new(move |channel| -> TokenFuture {
            Box::pin(provider(channel))
        }));
        self
    }

    /// Which servers `wss://` trusts.
    pub fn tls(mut self, tls: TlsSettings) -> Self {
        self.tls = tls;
        self
    }

    /// When WebSocket upgrades fail as a blocked upgrade does, dial the
    /// SSE + HTTP fallback (spec/PROTOCOL.md §1.7) instead, and try
    /// WebSocket again now and then (see [`belay_proto::TransportChoice`]).
    /// On by default with [`FallbackConfig::default`](belay_proto::FallbackConfig);
    /// `None`: WebSocket only.
    pub fn fallback(mut self, fallback: Option<belay_proto::FallbackConfig>) -> Self {
        self.fallback = fallback;
        self
    }

    /// The relay's host timing (its heartbeat interval and connect
    /// allowance), from which [`Client::call_host`]'s deadline is set: the
    /// wake bound plus the config's request timeout.
    pub fn host_timing(mut self, timing: &HostTiming) -> Self {
        self.host_timing = Some(timing.clone());
        self
    }

    /// The codec to ask the server for (spec/PROTOCOL.md §1.8): with
    /// [`Codec::Binary`] every upgrade offers `belay.bin.1, belay.json.1`
    /// and the connection speaks what the server chose (JSON from a server
    /// that does not negotiate); the default, JSON, offers nothing. The SSE
    /// fallback always speaks JSON.
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Seed of the core's jitter (default: random). Fix it to reproduce a run.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Check the URL and the TLS settings, then start connecting in the
    /// background and return at once. An unusable URL (not `ws://` or
    /// `wss://`, no host) or TLS setting is an error here, and nothing is
    /// started; everything after (refused dials, a server that is down) is
    /// the connection's to retry, seen in [`Client::status`] and
    /// [`Client::events`].
    ///
    /// ```
    /// use belay_client::{BuildError, Client};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let refused = Client::builder("http://example.com/ws").connect();
    /// assert!(matches!(refused, Err(BuildError::Url(_))));
    /// let client = Client::builder("ws://127.0.0.1:1/ws").connect().expect("a usable URL");
    /// client.close().await;
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn connect(self) -> Result<Client, BuildError> {
        let tls = self.tls.client_config()?;
        let parse = |url: &str| {
            transport::Target::parse(url, Arc::clone(&tls))
                .map(|target| {
                    target
                        .with_codec(self.codec)
                        .with_local_address(self.local_address)
                })
                .map_err(|failure| match failure {
                    belay_proto::Failure::InvalidConfig { detail } => BuildError::Url(detail),
                    other => BuildError::Url(format!("{other:?}")),
                })
        };
        let first = parse(&self.url)?;
        let others = self
            .failover_urls
            .iter()
            .map(|url| parse(url))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(self.start(Endpoints::new(first, others)))
    }

    /// Start the driver on `targets`.
    fn start(self, targets: Endpoints) -> Client {
        let origin = tokio::time::Instant::now();
        let seed = self
            .seed
            .unwrap_or_else(|| RandomState::new().hash_one(origin));
        let host_call_timeout = self.resolved_host_call_timeout();
        let session = Session::new(self.resolved_config(), belay_proto::Instant::ZERO, seed);
        let (commands_tx, commands_rx) = mpsc::unbounded_channel();
        let (status_tx, status_rx) = watch::channel(Status::default());
        let (events_tx, _) = broadcast::channel(EVENT_CAPACITY);
        let (finished_tx, finished_rx) = watch::channel(false);
        let driver = Driver::new(
            session,
            origin,
            Ok(targets),
            driver::Providers {
                token: self.token_provider,
                subscription_token: self.subscription_tokens,
            },
            commands_rx,
            commands_tx.downgrade(),
            Outlets {
                status: status_tx,
                events: events_tx.clone(),
                finished: finished_tx,
            },
            self.fallback.map(belay_proto::TransportChoice::new),
        );
        let task = tokio::spawn(driver.run());
        Client {
            task: Arc::new(std::sync::Mutex::new(Some(task))),
            host_call_timeout,
            commands: commands_tx,
            status: status_rx,
            events: events_tx,
            finished: finished_rx,
        }
    }
}
