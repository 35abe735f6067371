//! belay-client: the tokio driver of the Belay core.
//!
//! Every decision about the connection — when it is alive, how ready it is,
//! when to dial again, how each request settles, where a subscription
//! resumes — is made by [`belay_proto::Session`]. This crate only does the
//! I/O and keeps the time: one background task owns the session, dials
//! WebSocket transports (`ws://`, or `wss://` through rustls), feeds their
//! frames in, sends what the session asks, and sleeps until its next timeout.
//!
//! ```text
//!   Client (cheap clones) ──commands──▶ driver task ── Session (belay-proto)
//!     status()  ◀── watch ──────────────┤   │ OpenTransport / Transmit / CloseTransport
//!     events()  ◀── broadcast ──────────┤   ▼
//!     request() ◀── oneshot ────────────┤  transport task per TransportId
//!     subscribe() ◀── Item stream ──────┘  (TCP, TLS, WebSocket upgrade, frames)
//! ```
//!
//! Dropping the last [`Client`] stops the connection; [`Client::close`]
//! stops it and waits until every task it started has ended.
//!
//! Frames are JSON by default. [`ClientBuilder::codec`] with
//! [`Codec::Binary`](belay_proto::message::Codec) asks the server for the
//! compact binary codec (spec/PROTOCOL.md §1.8); [`Status::codec`] says
//! what each connection speaks (JSON with a server that does not negotiate,
//! and on the SSE fallback).
//!
//! # Example
//!
//! ```no_run
//! use belay_client::{Client, Item};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::builder("ws://127.0.0.1:8080/ws")
//!     .token("secret")
//!     .connect()?;
//! let mut feed = client.subscribe("feed").await?;
//! client.ready().await?;
//! let echoed = client.request("echo", json!({"hello": 1})).await?;
//! assert_eq!(echoed, json!({"hello": 1}));
//! while let Some(item) = feed.next().await {
//!     match item {
//!         Item::Publication(p) => println!("{} #{}: {}", p.channel, p.offset, p.data),
//!         Item::Resync => println!("history lost: reload a snapshot"),
//!         _ => break,
//!     }
//! }
//! client.close().await;
//! # Ok(())
//! # }
//! ```
//!
//! # Building, waiting, reading
//!
//! [`ClientBuilder::connect`] checks the URL and TLS settings first: an
//! unusable URL is a [`BuildError`], and nothing is started. The builder's setters can come in any order:
//! [`ClientBuilder::configure`]'s changes apply on top of
//! [`ClientBuilder::config`], and [`ClientBuilder::host_timing`] is combined
//! with the final request timeout, when the client is built.
//!
//! A request made while the connection is not ready fails at once with
//! [`RequestError::NotReady`] and is never sent: the honest default.
//! [`RequestOptions::wait_ready`] waits for the session instead, up to a
//! bound, and still ends typed (answered, or `NotReady` when the wait ends,
//! or `Closed`). A server's refusal is [`RequestError::Server`] with a typed
//! [`ErrorCode`] and the server's `retry_after_ms`.
//!
//! [`Client::history`] reads a channel's retained publications and
//! [`Client::presence_stats`] counts its subscribers, both allowed exactly
//! when the client may subscribe to the channel (spec/PROTOCOL.md §4.7,
//! §4.8). [`Status::last_loss`] keeps why the last session was lost apart
//! from [`Status::last_attempt_failure`], the failed redials after it.
//!
//! ```no_run
//! use std::time::Duration;
//! use belay_client::{Client, ErrorCode, HistoryOptions, RequestError, RequestOptions};
//! use serde_json::json;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = Client::builder("ws://127.0.0.1:8080/ws").connect()?;
//! let wait = RequestOptions::default().wait_ready(Duration::from_secs(5));
//! match client.request_with("orders.create", json!({"sku": "A1"}), wait).await {
//!     Ok(order) => println!("{}", order.get()),
//!     Err(RequestError::Server { code: ErrorCode::RateLimited, retry_after_ms, .. }) => {
//!         println!("slow down: retry after {retry_after_ms:?} ms");
//!     }
//!     Err(RequestError::NotReady) => println!("not connected within 5 s: not sent"),
//!     Err(other) => println!("{other}"),
//! }
//! let last = client
//!     .history("chat:lobby", HistoryOptions::default().limit(20).reverse(true))
//!     .await?;
//! let stats = client.presence_stats("chat:lobby").await?;
//! println!("{} messages, {} people", last.publications.len(), stats.users);
//! if let Some(loss) = &client.status().borrow().last_loss {
//!     println!("last lost: {:?}", loss.reason);
//! }
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod builder;
mod driver;
mod endpoints;
mod error;
mod error_code;
mod fallback;
mod history;
pub mod host;
mod presence;
mod sse;
mod status;
mod subscription;
mod tls;
mod transport;
mod upgrade;
mod wait_ready;

use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{CallParams, PublishParams, RawJson};
use belay_proto::server::{CALL_METHOD, PUBLISH_METHOD};
use belay_proto::Call;
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

pub use belay_proto;
pub use belay_proto::TokenError;
pub use builder::{ClientBuilder, SubscriptionTokenProvider, TokenFuture, TokenProvider};
pub use error::{BuildError, Closed, RequestError, SubscribeError, TlsError};
pub use error_code::ErrorCode;
pub use history::{History, HistoryError, HistoryOptions, HistoryPublication};
pub use presence::{PresenceError, PresenceMember, PresenceStats};
pub use status::{ClientEvent, Disconnect, Status};
pub use subscription::{Item, Subscription};
pub use tls::TlsSettings;

use driver::Command;

/// Per-request options for [`Client::request_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestOptions {
    /// Deadline of this request; the config's `request_timeout` if `None`.
    pub timeout: Option<Duration>,
    /// Carried on the wire so that a retry cannot run twice.
    pub idempotency_key: Option<String>,
    /// While the connection is not ready for requests, wait up to this
    /// long for it instead of failing at once with
    /// [`RequestError::NotReady`]; `None` (the default): fail at once.
    /// The request's own deadline starts when it is sent.
    pub wait_ready: Option<Duration>,
}

impl RequestOptions {
    /// Set the deadline.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Set the idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Wait up to `wait` for the connection to be ready for requests
    /// (see [`RequestOptions::wait_ready`]).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use belay_client::{Client, RequestError, RequestOptions};
    /// use serde_json::json;
    ///
    /// # async fn run() -> Result<(), belay_client::BuildError> {
    /// let client = Client::builder("ws://127.0.0.1:8080/ws").connect()?;
    /// // Right after building: not connected yet. Without the wait this
    /// // is `NotReady` at once; with it, sent once the session is up.
    /// let options = RequestOptions::default().wait_ready(Duration::from_secs(5));
    /// match client.request_with("echo", json!(1), options).await {
    ///     Ok(result) => println!("{}", result.get()),
    ///     Err(RequestError::NotReady) => println!("not connected within 5 s: not sent"),
    ///     Err(other) => println!("{other}"),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait_ready(mut self, wait: Duration) -> Self {
        self.wait_ready = Some(wait);
        self
    }
}

/// A handle on one resilient connection. Cheap to clone; the connection
/// lives until [`Client::close`] or until the last handle is dropped.
#[derive(Debug, Clone)]
pub struct Client {
    commands: mpsc::UnboundedSender<Command>,
    status: watch::Receiver<Status>,
    events: broadcast::Sender<ClientEvent>,
    finished: watch::Receiver<bool>,
    host_call_timeout: Duration,
    /// The driver task, awaited by the first [`Client::close`].
    task: Arc<std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>>,
}

impl Client {
    /// A builder for a client of the server at `url` (`ws://` or `wss://`).
    pub fn builder(url: impl Into<String>) -> ClientBuilder {
        ClientBuilder::new(url.into())
    }

    /// The connection's status; changes are published as they happen.
    pub fn status(&self) -> watch::Receiver<Status> {
        self.status.clone()
    }

    /// Wait until the connection is ready: transport and protocol up and
    /// every subscription confirmed. Fails once the client is closed.
    pub async fn ready(&self) -> Result<(), Closed> {
        let mut status = self.status.clone();
        let ready = status
            .wait_for(|s| s.ready || s.state == belay_proto::ConnectionState::Stopped)
            .await
            .map_err(|_| Closed)?;
        if ready.ready {
            Ok(())
        } else {
            Err(Closed)
        }
    }

    /// Lifecycle events from now on (connecting, connected, readiness,
    /// disconnected with the retry plan, resubscribed, recovery outcome,
    /// halted, stopped).
    pub fn events(&self) -> broadcast::Receiver<ClientEvent> {
        self.events.subscribe()
    }

    /// Call `method` with `params`, with the config's default deadline. The
    /// result is the JSON text the server sent ([`RawJson`]: compare it with
    /// a `Value`, or `parse::<T>()` it); the client never parses it itself,
    /// so a result no `Value` could hold (`1e400`, 200 levels deep) still
    /// arrives.
    pub async fn request(&self, method: &str, params: Value) -> Result<RawJson, RequestError> {
        self.request_with(method, params, RequestOptions::default())
            .await
    }

    /// Call `method` with `params` and per-request options. Settles exactly
    /// once: with the result, or with a typed error no later than the deadline
    /// (plus [`RequestOptions::wait_ready`], if set: a request that found
    /// no ready connection within it is [`RequestError::NotReady`], never
    /// sent). Dropping the future abandons the wait.
    pub async fn request_with(
        &self,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<RawJson, RequestError> {
        let mut call = Call::new(method, params);
        if let Some(timeout) = options.timeout {
            call = call.with_timeout(timeout);
        }
        if let Some(key) = options.idempotency_key {
            call = call.with_idempotency_key(key);
        }
        let Some(wait) = options.wait_ready else {
            return self.send_call(call).await;
        };
        self.send_when_ready(call, wait).await
    }

    /// Hand `call` to the driver and wait for how it settles.
    pub(crate) async fn send_call(&self, call: Call) -> Result<RawJson, RequestError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Request { call, reply })
            .map_err(|_| RequestError::Closed)?;
        answer.await.unwrap_or(Err(RequestError::Closed))
    }

    /// Publish `data` to `channel` from this client: the reserved request
    /// `$publish` (spec/PROTOCOL.md §4.6), with the config's default
    /// deadline. The result is `{"offset": N, "epoch": "..."}`; a refusal
    /// is [`RequestError::Server`] (`forbidden`, `too_large`, …).
    pub async fn publish(&self, channel: &str, data: Value) -> Result<RawJson, RequestError> {
        self.publish_with(channel, data, RequestOptions::default())
            .await
    }

    /// [`publish`](Self::publish) with per-request options (a deadline, an
    /// idempotency key so a retry publishes once).
    pub async fn publish_with(
        &self,
        channel: &str,
        data: Value,
        options: RequestOptions,
    ) -> Result<RawJson, RequestError> {
        let params = reserved_params(&PublishParams::new(channel, data));
        self.request_with(PUBLISH_METHOD, params, options).await
    }

    /// Call `method` of the resident host `host` through the relay: the
    /// reserved request `$call` (docs/HOSTS.md). A sleeping host is woken
    /// and the call waits for it, so its deadline is not the request
    /// default but the relay's wake bound plus the request default (30 s
    /// with the default [`HostTiming`](belay_proto::host::HostTiming); [`ClientBuilder::host_timing`]
    /// sets the relay's). A host that did not wake within the bound is
    /// [`RequestError::Server`] `host_asleep` (retry after
    /// `retry_after_ms`); `not_found`, `host_offline` and `host_lost` are
    /// the other refusals of the relay.
    pub async fn call_host(
        &self,
        host: &str,
        method: &str,
        params: Value,
    ) -> Result<RawJson, RequestError> {
        let options = RequestOptions::default().timeout(self.host_call_timeout);
        self.call_host_with(host, method, params, options).await
    }

    /// [`call_host`](Self::call_host) with per-request options (its own
    /// deadline: keep it longer than the relay's wake bound).
    pub async fn call_host_with(
        &self,
        host: &str,
        method: &str,
        params: Value,
        options: RequestOptions,
    ) -> Result<RawJson, RequestError> {
        let params = reserved_params(&CallParams::new(host, method, params));
        self.request_with(CALL_METHOD, params, options).await
    }

    /// The state of the resident host `host` (`asleep`, `waking`,
    /// `ready`, `offline`) as the relay publishes it on `$host-state:ID`:
    /// each publication's data is `{"state": ...}`. A service-level
    /// signal: this connection is fine whatever the host does.
    pub async fn watch_host(&self, host: &str) -> Result<Subscription, SubscribeError> {
        self.subscribe(&format!(
            "{}{host}",
            belay_proto::host::STATE_CHANNEL_PREFIX
        ))
        .await
    }

    /// Subscribe to `channel`: a stream of its publications in offset order
    /// with no gap and no duplicate across reconnects, or [`Item::Resync`]
    /// when the server cannot replay what was missed.
    pub async fn subscribe(&self, channel: &str) -> Result<Subscription, SubscribeError> {
        self.subscribe_inner(channel, None).await
    }

    /// Subscribe to `channel` with a subscription token: for channels whose
    /// server asks for one (a private channel; spec/PROTOCOL.md §5.2). The
    /// token goes with every subscribe of the channel, the resubscribes
    /// after a reconnect too. A token the server refuses ends the
    /// subscription (`unsubscribed` `unauthorized` or `forbidden`).
    pub async fn subscribe_with_token(
        &self,
        channel: &str,
        token: &str,
    ) -> Result<Subscription, SubscribeError> {
        self.subscribe_inner(channel, Some(token.to_owned())).await
    }

    async fn subscribe_inner(
        &self,
        channel: &str,
        token: Option<String>,
    ) -> Result<Subscription, SubscribeError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Subscribe {
                channel: channel.to_owned(),
                token,
                reply,
            })
            .map_err(|_| SubscribeError::Closed)?;
        answer.await.unwrap_or(Err(SubscribeError::Closed))
    }

    /// Dial now if the core is waiting out a backoff (or halted); does
    /// nothing while a connection or an attempt exists.
    pub fn reconnect_now(&self) -> Result<(), Closed> {
        self.commands
            .send(Command::ReconnectNow)
            .map_err(|_| Closed)
    }

    /// Probe the connection now instead of waiting out the heartbeat (after
    /// the host resumed from sleep, a network change, an app returning to the
    /// foreground): while open, one `ping` and at most 2 s (or the probe
    /// timeout, if shorter) for any frame before the connection is dropped
    /// and re-established. Does nothing while connecting or waiting.
    pub fn check_liveness(&self) -> Result<(), Closed> {
        self.commands
            .send(Command::CheckLiveness)
            .map_err(|_| Closed)
    }

    /// Tell the core whether the device has a network.
    pub fn set_network(&self, online: bool) -> Result<(), Closed> {
        self.commands
            .send(Command::SetNetwork(online))
            .map_err(|_| Closed)
    }

    /// Close for good: settle every request, end every subscription, close
    /// the transport, and return once every task the client started has
    /// ended. Other handles see [`RequestError::Closed`] from then on.
    pub async fn close(&self) {
        // Already closing or closed: just wait.
        let _ = self.commands.send(Command::Close);
        let mut finished = self.finished.clone();
        let _ = finished.wait_for(|done| *done).await;
        // `finished` is sent as the driver's last act; its task itself has
        // ended once this returns.
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }
}

/// A reserved method's typed params (belay_proto::message) as the request's
/// JSON params.
pub(crate) fn reserved_params<T: serde::Serialize>(params: &T) -> Value {
    // Strings, numbers and `Value`s: they always serialize.
    serde_json::to_value(params).unwrap_or_default()
}
