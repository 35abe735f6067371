//! Server configuration: `Default` plus setters.

use std::time::Duration;

use belay_proto::host::HostTiming;
use belay_proto::server::DrainConfig;
use belay_proto::server::Limits;
use belay_proto::server::Namespaces;
use belay_proto::server::TrustedProxies;

use crate::broker::HistoryLimits;

/// How a server behaves.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Per-connection limits and their documented responses.
    pub limits: Limits,
    /// New sessions admitted per second (token bucket; burst = one second's worth).
    pub accept_rate: f64,
    /// Channel history bounds of the embedded broker.
    pub history: HistoryLimits,
    /// Graceful drain schedule.
    pub drain: DrainConfig,
    /// How long a completed idempotent request's result is kept.
    pub idempotency_retention: Duration,
    /// Whether `welcome` carries reconnect pacing slots.
    pub pacing: bool,
    /// The fleet the server expects to hold: pacing periods are sized for at
    /// least this many clients (and for the largest fleet seen).
    pub expected_fleet: usize,
    /// TCP connections not yet upgraded, from all sources; more are answered
    /// 503 at once and closed. Keep it well below the file-descriptor limit.
    pub max_pending_upgrades: u32,
    /// TCP connections not yet upgraded from one source (an IPv4 address or
    /// an IPv6 /64).
    pub max_pending_upgrades_per_ip: u32,
    /// Sessions per second one source may be admitted; `None`: a quarter of
    /// `accept_rate`.
    pub accept_rate_per_ip: Option<f64>,
    /// Work units per second one source's frames may take (one per frame,
    /// one more per 256 B); past it its connections are read more slowly,
    /// nothing is refused. 0: no share.
    pub work_rate_per_ip: f64,
    /// Work units one source may take at once before it is paced.
    pub work_burst_per_ip: u32,
    /// Time a new TCP connection has to deliver its PROXY header (if
    /// expected) and its request headers; slower ones are closed.
    pub upgrade_timeout: Duration,
    /// Time a POST body (the SSE fallback's open, send and close; the
    /// standalone HTTP API's bodies) has to arrive in full once its
    /// request's headers have: past it the request is answered 408 and its
    /// connection closed. Until then the connection counts as not yet
    /// upgraded.
    pub body_timeout: Duration,
    /// Peers whose word about the client's address is believed: the PROXY
    /// protocol header (with `proxy_protocol`) or `X-Forwarded-For` /
    /// `Forwarded`. Empty by default: the TCP peer is the client.
    pub trusted_proxies: TrustedProxies,
    /// Expect a PROXY protocol header (v1 or v2) from trusted proxies.
    pub proxy_protocol: bool,
    /// Bytes queued for writing over all connections; past it, a connection
    /// holding more than its fair share (64 KiB) is a slow consumer (4009).
    pub max_outbound_bytes: usize,
    /// Keyed (idempotent) executions running at once, server-wide; they
    /// outlive their connection so a retry gets the outcome.
    pub max_keyed_running: usize,
    /// Bytes the idempotency cache may hold (keys and stored results).
    pub idempotency_max_bytes: usize,
    /// With a broker that shares outcomes across nodes
    /// ([`Broker::outcomes`](crate::broker::Broker::outcomes)): how long a
    /// claim on a key lives unless its node renews it (a third of the way
    /// through, while the execution runs). A retry on another node learns
    /// within this long that the node running the first attempt died.
    pub idempotency_lease: Duration,
    /// Longest `publication` frame; a longer one is refused at publish time
    /// ([`PublishError::TooLarge`](crate::broker::PublishError::TooLarge)).
    pub max_publication_len: usize,
    /// The credential of the admin routes (`Authorization: Bearer …`);
    /// without one they answer only loopback peers.
    pub admin_token: Option<String>,
    /// Per-prefix channel settings (history bounds, presence, join/leave).
    pub namespaces: Namespaces,
    /// Bytes of presence members this node keeps in memory (when the
    /// broker shares no presence store); a member beyond it is not
    /// recorded (the subscription is still granted).
    pub presence_max_bytes: usize,
    /// Resident hosts (docs/HOSTS.md): the heartbeat interval they are
    /// told, the connect allowance, the grace after a call.
    pub host_timing: HostTiming,
    /// Hosts the relay keeps a record of; a heartbeat from a new host
    /// beyond it is answered 503 (offline hosts nobody refers to are
    /// forgotten first).
    pub max_hosts: usize,
    /// Calls waiting for or running on one host; one more is refused
    /// `rate_limited`.
    pub max_calls_per_host: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            limits: Limits::default(),
            accept_rate: 500.0,
            history: HistoryLimits::default(),
            drain: DrainConfig::default(),
            idempotency_retention: Duration::from_secs(300),
            pacing: true,
            expected_fleet: 0,
            max_pending_upgrades: 2_048,
            max_pending_upgrades_per_ip: 64,
            accept_rate_per_ip: None,
            work_rate_per_ip: 8_000.0,
            work_burst_per_ip: 500,
            upgrade_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(5),
            trusted_proxies: TrustedProxies::default(),
            proxy_protocol: false,
            max_outbound_bytes: 256 << 20,
            max_keyed_running: 4_096,
            idempotency_max_bytes: 64 << 20,
            idempotency_lease: Duration::from_secs(10),
            max_publication_len: 64 * 1024,
            admin_token: None,
            namespaces: Namespaces::default(),
            presence_max_bytes: 16 << 20,
            host_timing: HostTiming::default(),
            max_hosts: 10_000,
            max_calls_per_host: 64,
        }
    }
}

impl ServerConfig {
    /// Replace the limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Set the admission rate (sessions per second).
    pub fn with_accept_rate(mut self, rate: f64) -> Self {
        self.accept_rate = rate;
        self
    }

    /// Replace the history bounds.
    pub fn with_history(mut self, history: HistoryLimits) -> Self {
        self.history = history;
        self
    }

    /// Replace the per-prefix channel settings.
    pub fn with_namespaces(mut self, namespaces: Namespaces) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Replace the drain schedule.
    pub fn with_drain(mut self, drain: DrainConfig) -> Self {
        self.drain = drain;
        self
    }

    /// Set how long idempotent results are kept.
    pub fn with_idempotency_retention(mut self, retention: Duration) -> Self {
        self.idempotency_retention = retention;
        self
    }

    /// Size pacing periods for at least `clients`.
    pub fn with_expected_fleet(mut self, clients: usize) -> Self {
        self.expected_fleet = clients;
        self
    }

    /// Bound TCP connections not yet upgraded (in all, and per source).
    pub fn with_pending_upgrades(mut self, total: u32, per_ip: u32) -> Self {
        self.max_pending_upgrades = total;
        self.max_pending_upgrades_per_ip = per_ip;
        self
    }

    /// Admit at most `rate` sessions per second from one source.
    pub fn with_accept_rate_per_ip(mut self, rate: f64) -> Self {
        self.accept_rate_per_ip = Some(rate);
        self
    }

    /// Give each source `rate` work units per second (0: unpaced), `burst`
    /// at once ([`work_rate_per_ip`](Self::work_rate_per_ip)).
    pub fn with_work_share_per_ip(mut self, rate: f64, burst: u32) -> Self {
        self.work_rate_per_ip = rate;
        self.work_burst_per_ip = burst;
        self
    }

    /// Set the time a new connection has to deliver its request headers.
    pub fn with_upgrade_timeout(mut self, timeout: Duration) -> Self {
        self.upgrade_timeout = timeout;
        self
    }

    /// Set the time a POST body has to arrive in full (408 after it).
    pub fn with_body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// Believe these proxies about the client's address; with
    /// `proxy_protocol`, expect a PROXY header from them.
    pub fn with_trusted_proxies(mut self, proxies: TrustedProxies, proxy_protocol: bool) -> Self {
        self.trusted_proxies = proxies;
        self.proxy_protocol = proxy_protocol;
        self
    }

    /// Bound the bytes queued for writing over all connections.
    pub fn with_max_outbound_bytes(mut self, bytes: usize) -> Self {
        self.max_outbound_bytes = bytes;
        self
    }

    /// Bound the keyed executions running at once.
    pub fn with_max_keyed_running(mut self, running: usize) -> Self {
        self.max_keyed_running = running;
        self
    }

    /// Set [`idempotency_lease`](Self::idempotency_lease).
    pub fn with_idempotency_lease(mut self, lease: Duration) -> Self {
        self.idempotency_lease = lease;
        self
    }

    /// Bound the bytes of the idempotency cache.
    pub fn with_idempotency_max_bytes(mut self, bytes: usize) -> Self {
        self.idempotency_max_bytes = bytes;
        self
    }

    /// Bound the bytes of presence members kept in memory.
    pub fn with_presence_max_bytes(mut self, bytes: usize) -> Self {
        self.presence_max_bytes = bytes;
        self
    }

    /// Set the longest `publication` frame.
    pub fn with_max_publication_len(mut self, len: usize) -> Self {
        self.max_publication_len = len;
        self
    }

    /// Require `token` on the admin routes.
    pub fn with_admin_token(mut self, token: impl Into<String>) -> Self {
        self.admin_token = Some(token.into());
        self
    }

    /// What the server-wide core needs of this configuration.
    pub(crate) fn node_config(&self) -> belay_proto::server::NodeConfig {
        let mut config = belay_proto::server::NodeConfig::default();
        config
            .set_namespaces(self.namespaces.clone())
            .set_drain(self.drain.clone())
            .set_max_publication_len(self.max_publication_len)
            .set_max_channel_len(self.limits.max_channel_len())
            .set_max_keyed_running(self.max_keyed_running)
            .set_host_calls(
                belay_proto::server::HostCallsConfig::default()
                    .with_timing(self.host_timing.clone())
                    .with_bounds(self.max_hosts, self.max_calls_per_host)
                    .with_answer_timeout(belay_proto::server::DEFAULT_ANSWER_TIMEOUT)
                    .with_first_call_id(random_call_base()),
            );
        config
    }

    /// The per-source limits this configuration implies.
    pub(crate) fn source_limits(&self) -> belay_proto::server::SourceLimits {
        let mut sources = belay_proto::server::SourceLimits::default();
        sources
            .set_max_per_source(self.limits.max_connections_per_ip())
            .set_max_pending_per_source(self.max_pending_upgrades_per_ip)
            .set_max_pending(self.max_pending_upgrades)
            .set_accept_rate_per_source(self.accept_rate_per_ip.unwrap_or(self.accept_rate / 4.0))
            .set_work_rate_per_source(self.work_rate_per_ip)
            .set_work_burst_per_source(self.work_burst_per_ip)
            .set_retry_after(self.limits.reap_bound());
        sources
    }

    /// Advertise reconnect pacing slots in `welcome` (default on).
    pub fn with_pacing(mut self, pacing: bool) -> Self {
        self.pacing = pacing;
        self
    }

    /// Serve resident hosts with `timing` (docs/HOSTS.md).
    pub fn with_host_timing(mut self, timing: HostTiming) -> Self {
        self.host_timing = timing;
        self
    }

    /// Keep records of at most `hosts` hosts, and at most `calls` calls
    /// per host.
    pub fn with_host_limits(mut self, hosts: usize, calls: usize) -> Self {
        self.max_hosts = hosts;
        self.max_calls_per_host = calls;
        self
    }
}

/// Where this server's host call ids start: a random multiple of 2³² below
/// 2⁵³ (ids stay exact in JavaScript), so nodes sharing a broker, whose
/// deliveries on `$host-calls:ID` every node's sessions of that host get,
/// never number two calls alike (2²¹ starting points; two nodes of ten
/// share one with odds of about 2 in 100,000, and then only their calls
/// to one host at the same moment could meet).
fn random_call_base() -> u64 {
    let mut bytes = [0u8; 4];
    getrandom::getrandom(&mut bytes).expect("the operating system's random generator");
    u64::from(u32::from_le_bytes(bytes) & 0x1F_FFFF) << 32
}

#[cfg(test)]
mod call_base_tests {
    #[test]
    fn host_call_ids_start_at_a_random_multiple_of_two_to_the_32_below_two_to_the_53() {
        let bases: Vec<u64> = (0..8).map(|_| super::random_call_base()).collect();
        for base in &bases {
            assert_eq!(base % (1 << 32), 0);
            assert!(*base < 1 << 53, "{base}");
        }
        let distinct: std::collections::HashSet<_> = bases.iter().collect();
        assert!(distinct.len() > 1, "random starting points: {bases:?}");
    }
}
