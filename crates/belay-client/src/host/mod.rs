//! Host mode: a resident host that holds its Belay session only while
//! someone needs it (docs/HOSTS.md).
//!
//! The host calls the relay's control-plane heartbeat at the interval the
//! relay sets; belay-proto's [`IdleSleep`] turns each answer into connect,
//! stay or disconnect. While awake, the host's session holds
//! `$host-calls:ID` and runs each call with the method registered for it.
//!
//! ```text
//!   Host::start ─▶ loop task ── heartbeat (HTTP, a connection per beat)
//!                     │  IdleSleep: Connect / Disconnect
//!                     ▼
//!                  session task ── Client ── $host-calls:ID ──▶ method tasks ─▶ $answer
//! ```
//!
//! [`Host::stop`] returns once every task the host started has ended; a
//! sleeping host runs only its loop task and holds no connection.
//!
//! ```no_run
//! use belay_client::host::{HostBuilder, HostError};
//!
//! # async fn run() {
//! let host = HostBuilder::new("ws://127.0.0.1:8080/ws", "host-token")
//!     .method("echo", |params| async move { Ok::<_, HostError>(params) })
//!     .start();
//! // ... serve until it is time to go ...
//! host.stop().await;
//! # }
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use belay_proto::host::{Beat, HostAction, IdleSleep, IdleSleepConfig, IdleSleepStats};
use belay_proto::message::RawJson;
use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::{Client, ClientBuilder, RequestError, TlsSettings};

mod control;
mod session;

use session::Awake;

/// A method's failure: becomes the call's `error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
#[non_exhaustive]
pub struct HostError {
    /// The error code the caller gets (spec/PROTOCOL.md §4.5).
    pub code: String,
    /// A message for a human.
    pub message: String,
}

impl HostError {
    /// An error with `code` and `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        HostError {
            code: code.into(),
            message: message.into(),
        }
    }
}

type MethodFuture = Pin<Box<dyn Future<Output = Result<Value, HostError>> + Send>>;
type Method = Arc<dyn Fn(Value) -> MethodFuture + Send + Sync>;
pub(crate) type Methods = Arc<HashMap<String, Method>>;

/// What a host is doing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostStatus {
    /// Whether the session is up (or starting).
    pub awake: bool,
    /// The host's id, once the relay said it.
    pub id: Option<String>,
    /// The last heartbeat's outcome.
    pub last_beat: Option<Beat>,
    /// The sleep decision's counters.
    pub stats: IdleSleepStats,
    /// Set once the host has stopped.
    pub stopped: bool,
}

/// Builds a [`Host`].
#[must_use]
pub struct HostBuilder {
    url: String,
    token: String,
    sleep: IdleSleepConfig,
    interval: Duration,
    heartbeat_timeout: Duration,
    tls: TlsSettings,
    methods: HashMap<String, Method>,
    session: Option<Box<dyn FnOnce(ClientBuilder) -> ClientBuilder + Send>>,
}

impl std::fmt::Debug for HostBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBuilder")
            .field("url", &self.url)
            .field("sleep", &self.sleep)
            .field("interval", &self.interval)
            .field("methods", &self.methods.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl HostBuilder {
    /// A host of the relay at `url` (its WebSocket endpoint, `ws://` or
    /// `wss://`; the heartbeat goes to `hosts/heartbeat` beside it) with
    /// the host token `token` (it names the host: JWT claim `host`).
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> Self {
        HostBuilder {
            url: url.into(),
            token: token.into(),
            sleep: IdleSleepConfig::default(),
            interval: Duration::from_secs(15),
            heartbeat_timeout: Duration::from_secs(5),
            tls: TlsSettings::default(),
            methods: HashMap::new(),
            session: None,
        }
    }

    /// How the host sleeps (its minimum awake time).
    pub fn sleep(mut self, sleep: IdleSleepConfig) -> Self {
        self.sleep = sleep;
        self
    }

    /// The heartbeat interval until the relay names one (every answer
    /// does). Default 15 s.
    pub fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// How long one heartbeat may take before it counts as failed (which
    /// keeps the session). Default 5 s.
    pub fn heartbeat_timeout(mut self, timeout: Duration) -> Self {
        self.heartbeat_timeout = timeout;
        self
    }

    /// Which servers `wss://` trusts (the session and the heartbeat).
    pub fn tls(mut self, tls: TlsSettings) -> Self {
        self.tls = tls;
        self
    }

    /// Serve `name` with `method`: its params in, its result (or error) out.
    pub fn method<F, Fut>(mut self, name: impl Into<String>, method: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, HostError>> + Send + 'static,
    {
        let method: Method = Arc::new(move |params| Box::pin(method(params)));
        self.methods.insert(name.into(), method);
        self
    }

    /// Adjust the session's [`ClientBuilder`] (its core config, codec).
    pub fn session(
        mut self,
        change: impl FnOnce(ClientBuilder) -> ClientBuilder + Send + 'static,
    ) -> Self {
        self.session = Some(Box::new(change));
        self
    }

    /// Start the host: its loop task beats at once, then at every interval.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    pub fn start(self) -> Host {
        let mut client = Client::builder(self.url.clone())
            .tls(self.tls.clone())
            .token(self.token.clone());
        if let Some(change) = self.session {
            client = change(client);
        }
        let target = self
            .tls
            .client_config()
            .map_err(|e| e.to_string())
            .and_then(|tls| {
                crate::transport::Target::parse(&self.url, tls).map_err(|f| format!("{f:?}"))
            });
        let (status_tx, status) = watch::channel(HostStatus::default());
        let (stop, stopped) = oneshot::channel();
        let current = Arc::new(Mutex::new(None));
        let task = tokio::spawn(
            Loop {
                target,
                token: self.token,
                client,
                methods: Arc::new(self.methods),
                sleep: IdleSleep::new(self.sleep),
                interval: self.interval,
                heartbeat_timeout: self.heartbeat_timeout,
                status: status_tx,
                current: Arc::clone(&current),
            }
            .run(stopped),
        );
        Host {
            stop: Some(stop),
            task: Some(task),
            status,
            current,
        }
    }
}

/// A running host. [`stop`](Self::stop) it to end it; dropping it ends it
/// too, without waiting.
#[derive(Debug)]
pub struct Host {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    status: watch::Receiver<HostStatus>,
    current: Arc<Mutex<Option<Client>>>,
}

impl Host {
    /// What the host is doing; changes are published at every heartbeat.
    pub fn status(&self) -> watch::Receiver<HostStatus> {
        self.status.clone()
    }

    /// Publish `data` to the host's channel `$host:ID`, for the clients
    /// watching it. While asleep: [`RequestError::NotReady`] (nothing is
    /// sent; nobody is subscribed, or the host would be awake).
    pub async fn publish(&self, data: Value) -> Result<RawJson, RequestError> {
        let client = session::lock(&self.current).clone();
        let id = self.status.borrow().id.clone();
        match (client, id) {
            (Some(client), Some(id)) => {
                client
                    .publish(
                        &format!("{}{id}", belay_proto::host::HOST_CHANNEL_PREFIX),
                        data,
                    )
                    .await
            }
            _ => Err(RequestError::NotReady),
        }
    }

    /// Stop: end the session if one is up, and return once every task the
    /// host started has ended.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The host's loop task.
struct Loop {
    target: Result<crate::transport::Target, String>,
    token: String,
    client: ClientBuilder,
    methods: Methods,
    sleep: IdleSleep,
    interval: Duration,
    heartbeat_timeout: Duration,
    status: watch::Sender<HostStatus>,
    current: Arc<Mutex<Option<Client>>>,
}

impl Loop {
    async fn run(mut self, mut stopped: oneshot::Receiver<()>) {
        let origin = tokio::time::Instant::now();
        let now = || belay_proto::Instant::from_elapsed(origin.elapsed());
        let mut awake: Option<Awake> = None;
        let mut id: Option<String> = None;
        loop {
            let beat_at = tokio::time::Instant::now();
            let answer = match &self.target {
                Ok(target) => tokio::select! {
                    answer = control::heartbeat(target, &self.token, self.heartbeat_timeout) => answer,
                    _ = &mut stopped => break,
                },
                Err(why) => {
                    tracing::warn!(%why, "the relay URL is unusable; the host cannot beat");
                    control::Answer {
                        beat: Beat::Failed,
                        interval: None,
                        host: None,
                    }
                }
            };
            if awake.as_ref().is_some_and(Awake::has_ended) {
                if let Some(ended) = awake.take() {
                    ended.stop().await;
                }
                self.sleep.handle_session_ended(now());
            }
            if let Some(interval) = answer.interval {
                self.interval = interval;
            }
            if answer.host.is_some() {
                id = answer.host.clone();
            }
            self.sleep.handle_beat(now(), answer.beat);
            self.act(&mut awake, id.as_deref()).await;
            self.report(&awake, id.as_deref(), Some(answer.beat));
            tokio::select! {
                () = tokio::time::sleep_until(beat_at + self.interval) => {}
                _ = &mut stopped => break,
            }
        }
        self.sleep.stop(now());
        self.act(&mut awake, id.as_deref()).await;
        // Whatever the decision said, nothing of the session outlives stop.
        if let Some(session) = awake.take() {
            session.stop().await;
        }
        let last = self.status.borrow().last_beat;
        self.report(&awake, id.as_deref(), last);
        self.status.send_modify(|s| s.stopped = true);
    }

    async fn act(&mut self, awake: &mut Option<Awake>, id: Option<&str>) {
        while let Some(action) = self.sleep.poll_action() {
            match action {
                HostAction::Connect => {
                    // Without an id (an older relay that does not say it)
                    // the session cannot hold its calls channel; it still
                    // connects, as such a relay expects.
                    let session = Awake::start(
                        self.client.clone(),
                        id.unwrap_or_default().to_owned(),
                        Arc::clone(&self.methods),
                        Arc::clone(&self.current),
                    );
                    if let Some(old) = awake.replace(session) {
                        old.stop().await;
                    }
                }
                HostAction::Disconnect => {
                    if let Some(session) = awake.take() {
                        session.stop().await;
                    }
                }
                _ => {}
            }
        }
    }

    fn report(&self, awake: &Option<Awake>, id: Option<&str>, beat: Option<Beat>) {
        let stats = self.sleep.stats();
        self.status.send_modify(|s| {
            s.awake = awake.is_some();
            s.id = id.map(str::to_owned);
            s.last_beat = beat;
            s.stats = stats;
        });
    }
}
