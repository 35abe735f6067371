//! Every setting of the config file: its section and name, what kind of
//! value it takes, its default (as TOML text, checked by the same rules as
//! a user's file) and what it does. The checker, the defaults file
//! (`belay config defaults`) and the environment overrides all read this
//! one table.

/// What a setting's value must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    /// A whole number in `min..=max`.
    Int { min: i64, max: i64 },
    /// A number greater than `above`.
    Float { above: f64 },
    /// `true` or `false`.
    Bool,
    /// Any string.
    Str,
    /// One of these strings.
    Choice(&'static [&'static str]),
    /// A list of strings.
    List,
    /// A path to a file that must exist.
    File,
    /// `IP:PORT`.
    Addr,
    /// A list of addresses or CIDR ranges.
    Ranges,
    /// `memory`, `redis://…` or `rediss://…`.
    BrokerUrl,
    /// A backend's `http://HOST…` or `https://HOST…` URL.
    BackendUrl,
}

/// One setting.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Key {
    /// `section.name`.
    pub(crate) path: &'static str,
    pub(crate) kind: Kind,
    /// The default as TOML text; `None`: unset unless given.
    pub(crate) default: Option<&'static str>,
    pub(crate) doc: &'static str,
    /// A credential: never printed, and best given by environment.
    pub(crate) secret: bool,
}

impl Key {
    /// The section.
    pub(crate) fn section(&self) -> &'static str {
        self.path.split_once('.').map_or(self.path, |(s, _)| s)
    }

    /// The name within its section.
    pub(crate) fn name(&self) -> &'static str {
        self.path.split_once('.').map_or(self.path, |(_, n)| n)
    }

    /// The environment variable that overrides it: `BELAY_SECTION_NAME`.
    pub(crate) fn env_var(&self) -> String {
        format!("BELAY_{}", self.path.replace('.', "_").to_uppercase())
    }
}

const fn int(min: i64, max: i64) -> Kind {
    Kind::Int { min, max }
}

const POSITIVE: Kind = Kind::Float { above: 0.0 };
const COUNT: Kind = int(1, 1 << 40);
const MILLIS: Kind = int(1, 3_600_000);
const SECS: Kind = int(0, 86_400);

const fn key(path: &'static str, kind: Kind, default: &'static str, doc: &'static str) -> Key {
    Key {
        path,
        kind,
        default: Some(default),
        doc,
        secret: false,
    }
}

const fn optional(path: &'static str, kind: Kind, doc: &'static str) -> Key {
    Key {
        path,
        kind,
        default: None,
        doc,
        secret: false,
    }
}

const fn secret(path: &'static str, doc: &'static str) -> Key {
    Key {
        path,
        kind: Kind::Str,
        default: None,
        doc,
        secret: true,
    }
}

/// The fewest characters a secret setting may have: the keys that open
/// the HTTP API and the admin routes must be guessable by nobody; any
/// other secret (the JWT secret) at least must not be empty.
pub(crate) fn least_secret_len(path: &str) -> usize {
    match path {
        "api.key" | "server.admin_token" => 16,
        _ => 1,
    }
}

/// Every setting, in the order of the defaults file.
pub(crate) const KEYS: &[Key] = &[
    key(
        "server.listen",
        Kind::Addr,
        "\"127.0.0.1:8080\"",
        "Address to listen on.",
    ),
    optional(
        "server.internal_listen",
        Kind::Addr,
        "Where to serve the operators' routes (/metrics, /admin/*) apart from the clients' port, e.g. \"127.0.0.1:9090\"; unset: /metrics and the admin routes are on server.listen (the admin routes behind their guard).",
    ),
    key(
        "server.accept_rate",
        POSITIVE,
        "500.0",
        "Sessions admitted per second.",
    ),
    optional(
        "server.accept_rate_per_ip",
        POSITIVE,
        "Sessions admitted per second from one IP (default: a quarter of accept_rate).",
    ),
    key(
        "server.expected_clients",
        int(0, 1 << 40),
        "0",
        "The fleet this server expects: reconnect pacing periods are sized for at least this many clients.",
    ),
    secret(
        "server.admin_token",
        "The credential of the admin routes (`Authorization: Bearer …`; at least 16 characters); unset, they answer requests that are provably local only (loopback, not forwarded by a proxy).",
    ),
    optional(
        "tls.cert",
        Kind::File,
        "Serve wss:// with this PEM certificate chain, leaf first (with tls.key).",
    ),
    optional("tls.key", Kind::File, "The PEM private key of tls.cert."),
    key(
        "log.format",
        Kind::Choice(&["text", "json"]),
        "\"text\"",
        "How log lines are written (to stderr): `text`, one line each, coloured only on a terminal, or `json`, one object per line. The level is `RUST_LOG` (default `info`; per-connection lines are at `debug`).",
    ),
    key(
        "log.summary_secs",
        SECS,
        "60",
        "Every this many seconds, one `info` line with the connections open and what happened since the last (accepted, welcomed, closed by code, refused); written only when something changed; 0: never.",
    ),
    key(
        "heartbeat.ping_interval_ms",
        MILLIS,
        "8000",
        "Server ping interval (advertised in `welcome`); with the pong timeout, a silent death is noticed within 16 s at both ends at the defaults.",
    ),
    key(
        "heartbeat.pong_timeout_ms",
        MILLIS,
        "8000",
        "Silence after a ping before the connection is reaped (4000).",
    ),
    key(
        "drain.lb_delay_secs",
        SECS,
        "25",
        "How long /readyz answers 503 before clients are advised to move.",
    ),
    key(
        "drain.spread_ms",
        int(0, 300_000),
        "10000",
        "How long a drain spreads the clients' reconnects over.",
    ),
    key(
        "limits.allowed_origins",
        Kind::List,
        "[]",
        "Origins allowed to open a session, e.g. \"https://app.example.com\"; empty: any.",
    ),
    key(
        "limits.max_frame_len",
        COUNT,
        "65536",
        "Longest inbound frame in bytes (1009 above it).",
    ),
    key(
        "limits.messages_per_sec",
        POSITIVE,
        "100.0",
        "Data frames per second per connection (over: rate_limited; a flood: 4029).",
    ),
    key(
        "limits.burst",
        int(1, 1 << 31),
        "200",
        "Data frames a connection may send at once.",
    ),
    key(
        "limits.liveness_per_sec",
        POSITIVE,
        "10.0",
        "Pings and pongs per second per connection, apart from data.",
    ),
    key(
        "limits.liveness_burst",
        int(1, 1 << 31),
        "50",
        "Pings and pongs at once (more: 4029).",
    ),
    key(
        "limits.handshake_timeout_ms",
        MILLIS,
        "10000",
        "From the upgrade to `connect` (4008 after it).",
    ),
    key(
        "limits.upgrade_timeout_ms",
        MILLIS,
        "5000",
        "A new TCP connection's time for its PROXY header, TLS and request headers.",
    ),
    key(
        "limits.body_timeout_ms",
        MILLIS,
        "5000",
        "A POST body's time to arrive in full once its headers have (SSE open, send and close; the HTTP API): 408 and the connection closed after it; until then it counts as a pending upgrade.",
    ),
    key(
        "limits.max_connections_per_ip",
        int(1, 1 << 31),
        "1000",
        "Connections from one IP (an IPv6 /64): 429 above it.",
    ),
    key(
        "limits.max_pending_upgrades",
        int(1, 1 << 31),
        "2048",
        "TCP connections not yet upgraded, from all sources: 503 above it.",
    ),
    key(
        "limits.max_pending_upgrades_per_ip",
        int(1, 1 << 31),
        "64",
        "TCP connections not yet upgraded from one IP: 503 above it.",
    ),
    key(
        "limits.work_rate_per_ip",
        int(0, 1 << 31),
        "8000",
        "Work units per second one IP's frames may take (1 per frame, 1 more per 256 B); past it its connections are read more slowly, nothing is refused. 0: no share.",
    ),
    key(
        "limits.work_burst_per_ip",
        int(0, 1 << 31),
        "500",
        "Work units one IP may take at once before its frames are paced.",
    ),
    key(
        "limits.outbound_queue",
        COUNT,
        "1024",
        "Frames queued for one connection (full: 4009 slow consumer); a resume replays at most half.",
    ),
    key(
        "limits.outbound_bytes",
        COUNT,
        "1048576",
        "Bytes queued for one connection (over: 4009); a resume replays at most half.",
    ),
    key(
        "limits.max_outbound_bytes",
        COUNT,
        "268435456",
        "Bytes queued over all connections (over, beyond 64 KiB: 4009).",
    ),
    key(
        "limits.max_in_flight",
        COUNT,
        "64",
        "Requests running at once per connection (over: rate_limited).",
    ),
    key(
        "limits.max_subscriptions",
        COUNT,
        "1000",
        "Subscriptions per connection (over: unsubscribed forbidden).",
    ),
    key(
        "limits.max_channel_len",
        int(1, 65_536),
        "255",
        "Longest channel name in bytes (over: unsubscribed bad_request).",
    ),
    key(
        "limits.max_publication_len",
        COUNT,
        "65536",
        "Longest publication frame in bytes (longer: refused at publish time).",
    ),
    key(
        "idempotency.max_keyed_running",
        COUNT,
        "4096",
        "Keyed (idempotent) executions running at once, server-wide.",
    ),
    key(
        "idempotency.max_bytes",
        COUNT,
        "67108864",
        "Bytes the idempotency cache holds.",
    ),
    key(
        "idempotency.retention_secs",
        int(1, 86_400),
        "300",
        "How long an idempotency key's outcome is kept for retries.",
    ),
    key(
        "hosts.heartbeat_interval_ms",
        int(100, 3_600_000),
        "15000",
        "How often resident hosts call POST /hosts/heartbeat (told in every answer); a call to a sleeping host waits up to this plus hosts.connect_allowance_ms (docs/HOSTS.md).",
    ),
    key(
        "hosts.connect_allowance_ms",
        int(100, 600_000),
        "5000",
        "How long a woken host may take to connect and hold its calls channel.",
    ),
    key(
        "hosts.grace_ms",
        int(0, 86_400_000),
        "60000",
        "How long a host stays needed after its last call ended.",
    ),
    key(
        "hosts.max_hosts",
        int(1, 10_000_000),
        "10000",
        "Hosts the relay keeps a record of; a new host beyond it is answered 503.",
    ),
    key(
        "hosts.max_calls_per_host",
        int(1, 65_536),
        "64",
        "Calls waiting for or running on one host; one more is refused rate_limited.",
    ),
    key(
        "history.max_len",
        int(0, 1 << 31),
        "1000",
        "Publications kept per channel for recovery.",
    ),
    key(
        "history.max_age_secs",
        int(1, 86_400 * 7),
        "300",
        "How long a publication stays recoverable.",
    ),
    key(
        "history.max_bytes_per_channel",
        int(1_024, 1 << 40),
        "4194304",
        "Bytes of history one channel keeps (data plus ~40 B per publication); the oldest go first, and a resume past them is not recovered. With Redis: bytes of data in the channel's Stream.",
    ),
    key(
        "history.max_bytes",
        int(1 << 16, 1 << 40),
        "268435456",
        "Bytes of history all channels keep together (~90 B per publication beyond its data); the oldest go first, whichever channel. Memory broker only (with Redis, Redis's maxmemory: docs/CLUSTER.md).",
    ),
    key(
        "history.max_channels",
        COUNT,
        "100000",
        "Channels the broker holds (over: unsubscribed unavailable).",
    ),
    key(
        "network.trusted_proxies",
        Kind::Ranges,
        "[]",
        "Proxies (addresses or CIDR ranges) believed about the client's address.",
    ),
    key(
        "network.proxy_protocol",
        Kind::Bool,
        "false",
        "Expect a PROXY protocol header (v1 or v2) from trusted proxies.",
    ),
    key(
        "broker.url",
        Kind::BrokerUrl,
        "\"memory\"",
        "Where channels live: \"memory\" (this process) or \"redis://[user[:password]@]host:port[/db]\" (\"rediss://\" for TLS), shared by every node on it.",
    ),
    key(
        "broker.redis_prefix",
        Kind::Str,
        "\"belay\"",
        "With Redis: the prefix of every key and PUB/SUB name.",
    ),
    key(
        "broker.presence_ttl_ms",
        int(1_000, 86_400_000),
        "60000",
        "With Redis: how long a presence entry outlives its last refresh (its node refreshes every third of this), so a killed node's members are gone from presence within it.",
    ),
    key(
        "broker.sentinels",
        Kind::List,
        "[]",
        "Redis Sentinels (\"redis://[:password@]host:port\", \"rediss://\" for TLS) to find the primary through; broker.url then gives only the primary's scheme, user, password and database. The primary is asked for again on every reconnect, so a failover is followed.",
    ),
    optional(
        "broker.sentinel_master",
        Kind::Str,
        "With broker.sentinels: the master name the Sentinels watch the primary under.",
    ),
    key(
        "broker.cluster",
        Kind::Bool,
        "false",
        "broker.url is a node of a Redis Cluster (Redis 7): the rest of the cluster is learnt from it, channels spread over its shards (sharded PUB/SUB), and MOVED, ASK and failovers are followed. Not with broker.sentinels.",
    ),
    key(
        "broker.cluster_nodes",
        Kind::List,
        "[]",
        "With broker.cluster: more nodes (\"redis://…\") to learn the cluster from, should broker.url's be down at start.",
    ),
    key(
        "broker.wait_replicas",
        int(0, 64),
        "0",
        "With Redis: acknowledge a publication (and send it live) only once this many replicas have it (Redis WAIT), so a failover loses nothing a client saw or a publisher was told. 0: no wait (a failover's lost publications are announced: recovered false).",
    ),
    key(
        "broker.wait_timeout_ms",
        MILLIS,
        "500",
        "With broker.wait_replicas: how long a publication waits for the replicas before it is answered unavailable.",
    ),
    optional(
        "broker.redis_ca",
        Kind::File,
        "With rediss://: the PEM CA certificates Redis's certificate must chain to (default: the system's roots).",
    ),
    key(
        "auth.mode",
        Kind::Choice(&["none", "jwt", "proxy"]),
        "\"none\"",
        "\"none\": everyone is anonymous; \"jwt\": a JWT in `connect` (or the Bearer header) is required; \"proxy\": the backend at proxy.connect_url says who each connection is.",
    ),
    key(
        "auth.jwt_algorithm",
        Kind::Choice(&["HS256", "RS256", "ES256"]),
        "\"HS256\"",
        "The one algorithm tokens may be signed with.",
    ),
    secret(
        "auth.jwt_secret",
        "HS256: the shared secret (best given as BELAY_AUTH_JWT_SECRET).",
    ),
    optional(
        "auth.jwt_public_key",
        Kind::File,
        "RS256 / ES256: the PEM public key tokens are checked against.",
    ),
    optional(
        "auth.jwt_audience",
        Kind::Str,
        "The `aud` tokens must name; a token without `aud` is refused (unset: `aud` is not checked).",
    ),
    optional(
        "auth.jwt_issuer",
        Kind::Str,
        "The `iss` tokens must name; a token without `iss` is refused (unset: not checked).",
    ),
    key(
        "auth.jwt_missing_channels",
        Kind::Choice(&["none", "any"]),
        "\"none\"",
        "What a connection token without a `channels` claim may subscribe to in `subscribe = \"grant\"` namespaces: \"none\" (a grant must be in the token) or \"any\" (every channel, as `[\"*\"]`).",
    ),
    key(
        "auth.jwt_leeway_secs",
        int(0, 3_600),
        "0",
        "Clock skew allowed on `exp` and `nbf`.",
    ),
    secret(
        "api.key",
        "The HTTP server API's key (`Authorization: Bearer KEY` or `X-API-Key`; at least 16 characters, never empty); unset: no API (best given as BELAY_API_KEY).",
    ),
    key(
        "api.max_body_bytes",
        int(1_024, 64 << 20),
        "1048576",
        "Longest API request body (413 above it).",
    ),
    optional(
        "proxy.connect_url",
        Kind::BackendUrl,
        "With auth.mode = \"proxy\": POST every connect and refresh token here (http://HOST:PORT/PATH, or https://); the backend answers who it is.",
    ),
    optional(
        "proxy.subscribe_url",
        Kind::BackendUrl,
        "POST subscribes to channels of namespaces with subscribe = \"backend\" here, for approval.",
    ),
    optional(
        "proxy.publish_url",
        Kind::BackendUrl,
        "POST client publishes to channels of namespaces with publish = \"backend\" here, for approval.",
    ),
    optional(
        "proxy.rpc_url",
        Kind::BackendUrl,
        "Forward every client request to this backend URL (http://HOST:PORT/PATH, or https://) as a POST; unset: no methods.",
    ),
    optional(
        "proxy.ca",
        Kind::File,
        "With https:// backend URLs: the PEM CA certificates the backend's certificate must chain to, and only those (a private CA, or a self-signed backend); unset: the Mozilla roots.",
    ),
    key(
        "proxy.timeout_ms",
        MILLIS,
        "5000",
        "How long the backend has to answer each proxy call (a request then fails `timeout`: it may have run; a connect closes 1013; a subscribe or publish fails `unavailable`).",
    ),
    key(
        "proxy.max_response_bytes",
        int(1_024, 64 << 20),
        "1048576",
        "Longest backend answer read, per call; it is cut as it streams (a request fails `too_large`: it ran; a connect closes 1013; a subscribe or publish fails `unavailable`).",
    ),
    key(
        "proxy.max_in_flight",
        int(1, 1 << 20),
        "256",
        "Calls at the backend at once, per proxy (more: `unavailable`, not executed).",
    ),
];

/// The setting at `path`, if there is one.
pub(crate) fn find(path: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.path == path)
}

/// The sections, in order.
pub(crate) fn sections() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for key in KEYS {
        if !out.contains(&key.section()) {
            out.push(key.section());
        }
    }
    out
}
