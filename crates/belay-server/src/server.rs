//! The server: its builder, the public API of the [`Server`] handle, and
//! its HTTP routes (the state they share is in `shared.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::{any, get, post};
use axum::Router;
use belay_proto::fleet::{ClusterCapacity, FleetPacing};
use belay_proto::message::{Payload, RawJson};
use belay_proto::server::{IdempotencyCache, Node};
use belay_proto::server::{SourceTable, TokenBucket};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch};

use crate::auth::{AllowAll, Authenticator};
use crate::broker::{Broker, MemoryBroker, PublishError, Publishing};
use crate::clock::Clock;
use crate::config::ServerConfig;
use crate::metrics::{lock, Metrics};
use crate::rpc::Methods;
use crate::shared::{Lifecycle, Server, Shared};
use crate::stream::StreamLayer;

/// Builds a [`Server`].
pub struct ServerBuilder {
    config: ServerConfig,
    methods: Methods,
    auth: Arc<dyn Authenticator>,
    broker: Option<Arc<dyn Broker>>,
    stream_layer: Option<Arc<dyn StreamLayer>>,
    sse_relay: Option<Arc<dyn crate::sse_relay::SseRelay>>,
    cluster: Option<ClusterCapacity>,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder::new()
    }
}

impl ServerBuilder {
    /// Defaults: [`ServerConfig::default`], no methods, everyone allowed,
    /// the embedded broker.
    pub fn new() -> Self {
        ServerBuilder {
            config: ServerConfig::default(),
            methods: Methods::new(),
            auth: Arc::new(AllowAll),
            broker: None,
            stream_layer: None,
            sse_relay: None,
            cluster: None,
        }
    }

    /// Use `config`.
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// Serve these methods.
    pub fn methods(mut self, methods: Methods) -> Self {
        self.methods = methods;
        self
    }

    /// Authenticate and authorize with `auth`.
    pub fn authenticator(mut self, auth: impl Authenticator) -> Self {
        self.auth = Arc::new(auth);
        self
    }

    /// Use `broker` instead of the embedded one.
    pub fn broker(mut self, broker: Arc<dyn Broker>) -> Self {
        self.broker = Some(broker);
        self
    }

    /// Pass every WebSocket session's byte stream through `layer` once it
    /// is upgraded (see [`StreamLayer`]): to count or shape its bytes, or
    /// to inject network faults in a test bench.
    pub fn stream_layer(mut self, layer: impl StreamLayer) -> Self {
        self.stream_layer = Some(Arc::new(layer));
        self
    }

    /// In a cluster: relay SSE sends and closes for streams another node
    /// holds through `relay` (spec/PROTOCOL.md §1.7), and prefix this
    /// node's stream ids with `relay.node()`.
    pub fn sse_relay(mut self, relay: Arc<dyn crate::sse_relay::SseRelay>) -> Self {
        self.sse_relay = Some(relay);
        self
    }

    /// Plan reconnect slots for a cluster behind a balancer from the start
    /// (see [`Server::set_cluster_capacity`], which changes it at runtime).
    pub fn cluster_capacity(mut self, capacity: ClusterCapacity) -> Self {
        self.cluster = Some(capacity);
        self
    }

    /// The server, not yet listening.
    pub fn build(self) -> Server {
        let clock = Clock::new();
        let now = clock.now();
        let broker = self.broker.unwrap_or_else(|| {
            Arc::new(
                MemoryBroker::new(self.config.history)
                    .with_namespaces(self.config.namespaces.clone()),
            )
        });
        let presence = broker.presence().unwrap_or_else(|| {
            Arc::new(crate::broker::MemoryPresence::new(
                self.config.presence_max_bytes,
            ))
        });
        let rate = self.config.accept_rate;
        let mut idempotency = IdempotencyCache::new(self.config.idempotency_retention, 100_000);
        idempotency.set_max_bytes(self.config.idempotency_max_bytes);
        let mut pacing = FleetPacing::new(rate, now);
        pacing.set_expected_fleet(self.config.expected_fleet);
        pacing.set_cluster(self.cluster);
        let (lifecycle, _) = watch::channel(Lifecycle::Serving);
        let node = Node::new(self.config.node_config(), now)
            .with_idempotency(idempotency)
            .with_admission(TokenBucket::new(rate, rate.max(1.0), now, true))
            .with_pacing(pacing)
            .with_sources(SourceTable::new(self.config.source_limits()));
        let shared = Shared {
            outbound_total: Arc::new(AtomicUsize::new(0)),
            limits: Arc::new(self.config.limits.clone()),
            node: Mutex::new(node),
            config: self.config,
            clock,
            methods: Box::new(self.methods),
            auth: self.auth,
            broker,
            presence,
            metrics: Metrics::default(),
            connections: Mutex::new(HashMap::new()),
            stream_layer: self.stream_layer,
            lifecycle,
            idempotent_waiters: Mutex::new(HashMap::new()),
            events: broadcast::channel(1_024).0,
            sse: Arc::default(),
            sse_relay: self.sse_relay,
            hosts: crate::hosts::HostRegistry::default(),
            admin: crate::admin_state::AdminState::default(),
        };
        Server {
            shared: Arc::new(shared),
        }
    }
}

impl Server {
    /// A builder with defaults.
    pub fn builder() -> ServerBuilder {
        ServerBuilder::new()
    }

    /// Publish `data` on `channel` from anywhere in the application.
    ///
    /// Refused, with nothing published, when the channel name is empty or
    /// longer than [`Limits::max_channel_len`](belay_proto::server::Limits::max_channel_len),
    /// when the `publication` frame would be longer than
    /// [`ServerConfig::max_publication_len`] or `data` nests deeper than
    /// [`MAX_PAYLOAD_DEPTH`](belay_proto::server::MAX_PAYLOAD_DEPTH) (a frame clients could not take), or when the
    /// broker cannot take publications now ([`PublishError::Unavailable`]).
    ///
    /// The checks run and the broker is asked when this is called; the
    /// returned future resolves to the publication (at once on the embedded
    /// broker, after a round trip on a networked one). Publications awaited
    /// one after the other from one caller keep that order on the channel.
    pub fn publish(&self, channel: &str, data: Payload) -> Publishing {
        let data = match self.checked(channel, &data) {
            Ok(data) => data,
            Err(refused) => return Box::pin(std::future::ready(Err(refused))),
        };
        let publishing = self.shared.broker.publish(channel, data);
        let shared = Arc::clone(&self.shared);
        Box::pin(async move {
            let publication = publishing.await?;
            crate::metrics::Metrics::add(&shared.metrics.publications);
            Ok(publication)
        })
    }

    /// `data` for `channel` as the broker takes it, or why it is refused.
    fn checked(&self, channel: &str, data: &Payload) -> Result<RawJson, PublishError> {
        let checked = lock(&self.shared.node).check_publication(channel, data);
        checked.map_err(PublishError::from)
    }

    /// The time a POST body has to arrive in full
    /// ([`ServerConfig::body_timeout`]): routes merged into
    /// [`Server::router`] that read bodies hold them to it.
    pub fn body_timeout(&self) -> std::time::Duration {
        self.shared.config.body_timeout
    }

    /// The server's metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// Live server events.
    pub fn events(&self) -> broadcast::Receiver<crate::events::ServerEvent> {
        self.shared.events.subscribe()
    }

    /// Add an event to the live feed ([`Server::events`]): an extension
    /// (a fault bench, an operator action) says what it did, in order with
    /// the server's own events. `kind` is a short fixed name (`"fault"`).
    pub fn announce(&self, kind: &'static str, detail: impl Into<String>) {
        self.shared.emit(kind, detail.into());
    }

    /// How long the server has been up (since it was built).
    pub fn uptime(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.shared.clock.now().as_millis())
    }

    /// Where the server is in its life.
    pub fn lifecycle(&self) -> Lifecycle {
        *self.shared.lifecycle.borrow()
    }

    /// Wait until the lifecycle is `Drained`.
    pub async fn drained(&self) {
        let mut rx = self.shared.lifecycle.subscribe();
        // The sender lives in `shared`, which outlives this borrow.
        let _ = rx.wait_for(|l| *l == Lifecycle::Drained).await;
    }

    /// Close every connection of `user` on this server with 4003
    /// `disconnected: REASON` (a final close: Belay clients stop
    /// reconnecting, `HaltReason::ServerClosed`). Returns how many.
    pub fn disconnect_user(&self, user: &str, reason: &str) -> usize {
        self.shared
            .with_node(|node| node.disconnect_user(user, reason))
    }

    /// Start a graceful drain (idempotent): `/readyz` answers 503 at once;
    /// after the load-balancer delay every client gets reconnect advice,
    /// then close 1012; [`Server::drained`] resolves when all are gone.
    pub fn drain(&self) {
        self.shared.start_drain();
    }

    /// Cut the drain short (an operator's second signal): every connection
    /// left is closed at once with 1001 `server shutting down`, and the
    /// server is drained. Starts the drain first if it had not started.
    pub fn end_drain(&self) {
        self.shared.end_drain();
    }

    /// The public HTTP routes: [`Server::client_router`]'s and `/metrics`.
    /// The admin routes are apart ([`Server::admin_router`]); to keep
    /// `/metrics` off the clients' port, serve [`Server::client_router`]
    /// there and [`Server::internal_router`] on a listener of its own.
    pub fn router(&self) -> Router {
        self.client_router().merge(self.metrics_router())
    }

    /// The routes clients use: `/ws`, the SSE fallback's `/sse`,
    /// `/sse/send` and `/sse/close`, `/healthz`, `/readyz`, and the
    /// resident hosts' `POST /hosts/heartbeat` (docs/HOSTS.md).
    pub fn client_router(&self) -> Router {
        Router::new()
            .route("/ws", any(crate::upgrade::handle))
            .route("/sse", post(crate::sse::open))
            .route("/sse/send", post(crate::sse::send))
            .route("/sse/close", post(crate::sse::close))
            .route("/healthz", get(|| async { "ok" }))
            .route("/readyz", get(readyz))
            .route("/hosts/heartbeat", post(crate::hosts::heartbeat))
            .with_state(self.clone())
    }

    /// The operators' routes, for a listener apart from the clients'
    /// (`belay serve`'s `server.internal_listen`): `/metrics`, open to
    /// whoever reaches the listener, and [`Server::admin_router`]'s, behind
    /// the admin guard.
    pub fn internal_router(&self) -> Router {
        self.metrics_router().merge(self.admin_router())
    }

    fn metrics_router(&self) -> Router {
        Router::new()
            .route("/metrics", get(metrics))
            .with_state(self.clone())
    }

    /// The admin routes and the admin web UI at `/admin/` (`POST
    /// /admin/drain`, `GET /admin/hosts`, the UI's JSON, actions and live
    /// feed; docs/OPERATIONS.md), behind the admin guard: a request needs
    /// `Authorization: Bearer <admin_token>` (or the UI's login cookie)
    /// when a token is configured, or else comes from a loopback peer
    /// naming a loopback host; and a request from a page (an `Origin`
    /// header) must come from the same origin. Merge it with
    /// [`Server::router`] to serve both, or serve it on a listener of its
    /// own. Built inside a Tokio runtime, it starts the UI's once-a-second
    /// sampler (else the first request to the UI does). See
    /// [`crate::admin`].
    pub fn admin_router(&self) -> Router {
        let admin = Router::new()
            .route("/admin/drain", post(admin_drain))
            .route("/admin/hosts", get(admin_hosts));
        crate::admin::guard(self, admin)
            .with_state(self.clone())
            .merge(crate::admin::routes(self))
    }

    /// Serve `router` (usually [`Server::router`], perhaps with more routes)
    /// on `listener` until the drain completes.
    pub async fn serve(&self, listener: TcpListener, router: Router) -> std::io::Result<()> {
        crate::tls::serve(self, listener, router, None).await
    }

    /// Like [`Server::serve`], over TLS: accept on `listener`, complete the
    /// TLS handshake with `tls` (see [`crate::tls::load_pem`]) within the
    /// handshake timeout, and serve `router` over HTTP/1.1 with WebSocket
    /// upgrades, so clients connect with `wss://`. Returns once the drain
    /// completes and every HTTP connection has ended (upgraded sessions are
    /// the drain's business).
    pub async fn serve_tls(
        &self,
        listener: TcpListener,
        router: Router,
        tls: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<()> {
        crate::tls::serve(self, listener, router, Some(tls)).await
    }
}

/// The resident hosts and their states (docs/HOSTS.md).
async fn admin_hosts(State(server): State<Server>) -> impl IntoResponse {
    let shared = &server.shared;
    axum::Json(serde_json::json!({ "hosts": shared.hosts.list(shared) }))
}

async fn metrics(State(server): State<Server>) -> impl IntoResponse {
    (
        [("content-type", "text/plain; version=0.0.4")],
        server.render_metrics(),
    )
}

impl Server {
    /// The Prometheus text of [`Server::metrics`] plus the gauges of what
    /// the server holds (pending upgrades, queued bytes, idempotency bytes,
    /// channels).
    pub fn render_metrics(&self) -> String {
        use std::fmt::Write as _;
        let shared = &self.shared;
        let mut out = shared.metrics.render();
        let pending = lock(&shared.node).sources().pending();
        let (idem_bytes, idem_keys) = {
            let node = lock(&shared.node);
            (node.idempotency().bytes(), node.idempotency().len())
        };
        let gauges = [
            (
                "belay_sse_streams",
                "Sessions over the SSE fallback open now (also in belay_connections_open).",
                shared.sse.len(),
            ),
            (
                "belay_hosts",
                "Resident hosts the relay keeps a record of (docs/HOSTS.md).",
                crate::hosts::HostRegistry::len(shared),
            ),
            (
                "belay_pending_upgrades",
                "TCP connections not yet upgraded.",
                pending as usize,
            ),
            (
                "belay_outbound_bytes",
                "Bytes queued for writing over all connections.",
                shared.outbound_total.load(Ordering::Relaxed),
            ),
            (
                "belay_idempotency_bytes",
                "Bytes held by the idempotency cache.",
                idem_bytes,
            ),
            (
                "belay_idempotency_keys",
                "Keys held by the idempotency cache.",
                idem_keys,
            ),
            (
                "belay_keyed_running",
                "Keyed executions running.",
                lock(&shared.node).keyed_running(),
            ),
            (
                "belay_ready",
                "1 while the node serves (/readyz 200), 0 once a drain has started.",
                usize::from(*shared.lifecycle.borrow() == Lifecycle::Serving),
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        if let Some(channels) = shared.broker.channels() {
            let _ = writeln!(
                out,
                "# HELP belay_channels Channels the broker holds.\n# TYPE belay_channels gauge\nbelay_channels {channels}"
            );
        }
        if let Some(bytes) = shared.broker.history_bytes() {
            let _ = writeln!(
                out,
                "# HELP belay_history_bytes Bytes of history the broker holds in this process (as history.max_bytes counts them).\n# TYPE belay_history_bytes gauge\nbelay_history_bytes {bytes}"
            );
        }
        out
    }
}

async fn readyz(State(server): State<Server>) -> impl IntoResponse {
    match server.lifecycle() {
        Lifecycle::Serving => (StatusCode::OK, "ready"),
        _ => (StatusCode::SERVICE_UNAVAILABLE, "draining"),
    }
}

async fn admin_drain(State(server): State<Server>) -> impl IntoResponse {
    server.drain();
    (StatusCode::ACCEPTED, "draining")
}
