//! [`Limits`]: what one connection may do, and the checks for each limit.

use std::time::Duration;

use super::channel::{check_channel_name, DEFAULT_MAX_CHANNEL_LEN};
use super::{RateLimiter, Violation};
use crate::heartbeat::Heartbeat;
use crate::message::MAX_FRAME_LEN;
use crate::time::Instant;

/// The shortest ping interval the server uses; clients raise shorter
/// advertised intervals to it (spec/PROTOCOL.md §3.2), so pinging faster
/// would only cost traffic.
pub const MIN_PING_INTERVAL: Duration = Duration::from_secs(1);

/// The shortest pong timeout: a zero timeout would reap every connection
/// whose client is a few milliseconds away.
pub const MIN_PONG_TIMEOUT: Duration = Duration::from_secs(1);

/// Per-connection limits of a server. `Default` plus setters:
///
/// into a [`Violation`].
///
/// The server treats client input as untrusted (spec/PROTOCOL.md §8.2), so
/// every resource a connection can consume is bounded: frame size, message
/// rate (data and liveness frames apart), handshake time, connections per
/// IP, queued outbound frames and bytes, requests in flight, channel names,
/// subscriptions, and silence. Each check returns the [`Violation`] whose
/// [`response`](Violation::response) says what to answer.
///
/// **Heartbeat on the server.** The server sends `ping` every
/// `ping_interval` and advertises it in `welcome` ([`Limits::ping_interval_ms`]);
/// the client's watchdog counts only what it receives, so a connection whose
/// outbound side is quiet still needs those pings (§3.4). To reap abandoned
/// connections the server feeds every inbound frame to the
/// [`Heartbeat`] from [`Limits::heartbeat`]: after `ping_interval` without
/// any inbound frame it says `Probe` (send a `ping`; one that is due anyway
/// can serve as both), and if nothing at all arrives within `pong_timeout`
/// of that probe it fails with `ProbeUnanswered`: close 4000. A live client
/// answers the periodic pings, so its inbound side is never quiet for long.
/// From the last inbound frame to the close is at most
/// `ping_interval + pong_timeout` (35 s with the defaults).
///
/// ```
/// use std::time::Duration;
/// use belay_proto::server::Limits;
///
/// let mut limits = Limits::default();
/// limits
///     .set_messages_per_sec(20.0)
///     .set_burst(40)
///     .set_allowed_origins(vec!["https://app.example.com".into()]);
/// assert!(limits.check_origin(Some("https://app.example.com")).is_ok());
/// assert!(limits.check_origin(Some("https://evil.example")).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Limits {
    max_frame_len: usize,
    messages_per_sec: f64,
    burst: u32,
    handshake_timeout: Duration,
    max_connections_per_ip: u32,
    outbound_queue: usize,
    ping_interval: Duration,
    pong_timeout: Duration,
    allowed_origins: Vec<String>,
    max_subscriptions: usize,
    max_channel_len: usize,
    outbound_bytes: usize,
    max_in_flight: usize,
    liveness_per_sec: f64,
    liveness_burst: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_frame_len: 64 * 1024,
            messages_per_sec: 100.0,
            burst: 200,
            handshake_timeout: Duration::from_secs(10),
            max_connections_per_ip: 1_000,
            outbound_queue: 1_024,
            ping_interval: Duration::from_secs(8),
            pong_timeout: Duration::from_secs(8),
            allowed_origins: Vec::new(),
            max_subscriptions: 1_000,
            max_channel_len: DEFAULT_MAX_CHANNEL_LEN,
            outbound_bytes: 1 << 20,
            max_in_flight: 64,
            liveness_per_sec: 10.0,
            liveness_burst: 50,
        }
    }
}

impl Limits {
    /// Longest inbound frame in bytes; longer ones are closed with 1009.
    /// Never above [`MAX_FRAME_LEN`]. Default: 64 KiB.
    pub fn max_frame_len(&self) -> usize {
        self.max_frame_len
    }

    /// See [`max_frame_len`](Self::max_frame_len); clamped to [`MAX_FRAME_LEN`].
    pub fn set_max_frame_len(&mut self, value: usize) -> &mut Self {
        self.max_frame_len = value.min(MAX_FRAME_LEN);
        self
    }

    /// Average inbound frames per second per connection. Default: 100.
    pub fn messages_per_sec(&self) -> f64 {
        self.messages_per_sec
    }

    /// See [`messages_per_sec`](Self::messages_per_sec); NaN and negative
    /// values become 0 (only the burst, never refilled), `+inf` is unlimited.
    pub fn set_messages_per_sec(&mut self, value: f64) -> &mut Self {
        self.messages_per_sec = if value > 0.0 { value } else { 0.0 };
        self
    }

    /// Inbound frames a connection may send at once, and the number of
    /// refused frames tolerated before a flood is closed (see
    /// [`RateLimiter`]). Default: 200.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// See [`burst`](Self::burst).
    pub fn set_burst(&mut self, value: u32) -> &mut Self {
        self.burst = value;
        self
    }

    /// Time from accepting the upgrade to receiving `connect`; past it the
    /// connection is closed with 4008. Default: 10 s.
    pub fn handshake_timeout(&self) -> Duration {
        self.handshake_timeout
    }

    /// See [`handshake_timeout`](Self::handshake_timeout).
    pub fn set_handshake_timeout(&mut self, value: Duration) -> &mut Self {
        self.handshake_timeout = value;
        self
    }

    /// Open connections allowed from one IP address; more are refused with
    /// HTTP 429 before the upgrade. Default: 1 000.
    pub fn max_connections_per_ip(&self) -> u32 {
        self.max_connections_per_ip
    }

    /// See [`max_connections_per_ip`](Self::max_connections_per_ip).
    pub fn set_max_connections_per_ip(&mut self, value: u32) -> &mut Self {
        self.max_connections_per_ip = value;
        self
    }

    /// Outbound frames queued per connection; a client whose queue is full
    /// reads too slowly and is closed with 4009. Default: 1 024.
    pub fn outbound_queue(&self) -> usize {
        self.outbound_queue
    }

    /// See [`outbound_queue`](Self::outbound_queue).
    pub fn set_outbound_queue(&mut self, value: usize) -> &mut Self {
        self.outbound_queue = value;
        self
    }

    /// Interval of the server's pings, advertised in `welcome`, and the
    /// inbound silence after which the server probes. At least
    /// [`MIN_PING_INTERVAL`]. Default: 8 s, so that at the defaults a
    /// silent death is noticed within 16 s at both ends: the server reaps a
    /// silent client within `ping_interval + pong_timeout`, and a Belay
    /// client gives up on a silent server after two advertised intervals.
    pub fn ping_interval(&self) -> Duration {
        self.ping_interval
    }

    /// See [`ping_interval`](Self::ping_interval).
    pub fn set_ping_interval(&mut self, value: Duration) -> &mut Self {
        self.ping_interval = value.max(MIN_PING_INTERVAL);
        self
    }

    /// How long a probe on a quiet connection may go unanswered (by any
    /// frame) before the server reaps the connection with 4000. At least
    /// [`MIN_PONG_TIMEOUT`]. Default: 8 s.
    pub fn pong_timeout(&self) -> Duration {
        self.pong_timeout
    }

    /// See [`pong_timeout`](Self::pong_timeout).
    pub fn set_pong_timeout(&mut self, value: Duration) -> &mut Self {
        self.pong_timeout = value.max(MIN_PONG_TIMEOUT);
        self
    }

    /// Origins allowed to open a connection, e.g. `https://app.example.com`;
    /// empty allows any. Default: empty.
    pub fn allowed_origins(&self) -> &[String] {
        &self.allowed_origins
    }

    /// See [`allowed_origins`](Self::allowed_origins).
    pub fn set_allowed_origins(&mut self, value: Vec<String>) -> &mut Self {
        self.allowed_origins = value;
        self
    }

    /// Channels one connection may be subscribed to at once; a `subscribe`
    /// for one more is refused with `unsubscribed` `forbidden`
    /// ([`Violation::TooManySubscriptions`]). Default: 1 000.
    pub fn max_subscriptions(&self) -> usize {
        self.max_subscriptions
    }

    /// See [`max_subscriptions`](Self::max_subscriptions).
    pub fn set_max_subscriptions(&mut self, value: usize) -> &mut Self {
        self.max_subscriptions = value;
        self
    }

    /// Longest channel name in bytes; a `subscribe` for a longer (or empty)
    /// name is refused with `unsubscribed` `bad_request`
    /// ([`Violation::InvalidChannel`]), and publishing to one is refused.
    /// Default: 255.
    pub fn max_channel_len(&self) -> usize {
        self.max_channel_len
    }

    /// See [`max_channel_len`](Self::max_channel_len).
    pub fn set_max_channel_len(&mut self, value: usize) -> &mut Self {
        self.max_channel_len = value;
        self
    }

    /// Bytes of encoded frames queued for one connection; a client whose
    /// queue would grow beyond it reads too slowly and is closed with 4009
    /// (one frame always fits, whatever its size). Default: 1 MiB.
    pub fn outbound_bytes(&self) -> usize {
        self.outbound_bytes
    }

    /// See [`outbound_bytes`](Self::outbound_bytes).
    pub fn set_outbound_bytes(&mut self, value: usize) -> &mut Self {
        self.outbound_bytes = value;
        self
    }

    /// Requests one connection may have running at once; one more is
    /// answered `rate_limited` `too many requests in flight`
    /// ([`Violation::TooManyInFlight`]). Default: 64.
    pub fn max_in_flight(&self) -> usize {
        self.max_in_flight
    }

    /// See [`max_in_flight`](Self::max_in_flight).
    pub fn set_max_in_flight(&mut self, value: usize) -> &mut Self {
        self.max_in_flight = value;
        self
    }

    /// Liveness frames (JSON `ping`/`pong`, WebSocket ping/pong control
    /// frames) per second per connection, counted apart from
    /// [`messages_per_sec`](Self::messages_per_sec) so that heartbeats are
    /// never refused for other traffic. A healthy client sends one every few
    /// seconds. Over the budget a ping is not answered; more than
    /// `liveness_burst` refused since the budget was last full is a flood:
    /// close 4029 ([`Violation::LivenessFlood`]). Default: 10.
    pub fn liveness_per_sec(&self) -> f64 {
        self.liveness_per_sec
    }

    /// See [`liveness_per_sec`](Self::liveness_per_sec); NaN and negative
    /// values become 0.
    pub fn set_liveness_per_sec(&mut self, value: f64) -> &mut Self {
        self.liveness_per_sec = if value > 0.0 { value } else { 0.0 };
        self
    }

    /// Liveness frames allowed at once, and refusals tolerated before a
    /// flood is closed. Default: 50.
    pub fn liveness_burst(&self) -> u32 {
        self.liveness_burst
    }

    /// See [`liveness_burst`](Self::liveness_burst).
    pub fn set_liveness_burst(&mut self, value: u32) -> &mut Self {
        self.liveness_burst = value;
        self
    }

    /// The liveness-frame limiter for a connection accepted at `now`.
    pub fn liveness_limiter(&self, now: Instant) -> RateLimiter {
        RateLimiter::new(self.liveness_per_sec, self.liveness_burst, now)
    }

    /// Check a channel name from a `subscribe`.
    pub fn check_channel(&self, name: &str) -> Result<(), Violation> {
        check_channel_name(name, self.max_channel_len).map_err(Violation::InvalidChannel)
    }

    /// Check whether a connection with `running` requests in flight may
    /// start one more.
    pub fn check_in_flight(&self, running: usize) -> Result<(), Violation> {
        if running >= self.max_in_flight {
            Err(Violation::TooManyInFlight)
        } else {
            Ok(())
        }
    }

    /// The `ping_interval_ms` to advertise in `welcome`.
    pub fn ping_interval_ms(&self) -> u64 {
        u64::try_from(self.ping_interval.as_millis()).unwrap_or(u64::MAX)
    }

    /// The inbound rate limiter for a connection accepted at `now`.
    pub fn rate_limiter(&self, now: Instant) -> RateLimiter {
        RateLimiter::new(self.messages_per_sec, self.burst, now)
    }

    /// The reaping heartbeat for a connection established at `now`: probes
    /// after `ping_interval` of inbound silence, fails `pong_timeout` after
    /// an unanswered probe.
    pub fn heartbeat(&self, now: Instant) -> Heartbeat {
        Heartbeat::new(now, self.ping_interval, self.pong_timeout)
    }

    /// When a connection accepted at `accepted_at` must have sent `connect`.
    pub fn handshake_deadline(&self, accepted_at: Instant) -> Instant {
        accepted_at.saturating_add(self.handshake_timeout)
    }

    /// Check the length in bytes of an inbound frame (a WebSocket layer
    /// should apply the same limit before buffering the frame).
    pub fn check_frame_len(&self, len: usize) -> Result<(), Violation> {
        if len > self.max_frame_len {
            Err(Violation::FrameTooLarge)
        } else {
            Ok(())
        }
    }

    /// Check the upgrade request's `Origin` header. Allowed when the list is
    /// empty, when the header is absent (native clients send none; the check
    /// protects browsers, which always send it), or when it equals an entry,
    /// ignoring ASCII case.
    pub fn check_origin(&self, origin: Option<&str>) -> Result<(), Violation> {
        match origin {
            _ if self.allowed_origins.is_empty() => Ok(()),
            None => Ok(()),
            Some(origin) => {
                let origin = origin.trim();
                if self
                    .allowed_origins
                    .iter()
                    .any(|allowed| allowed.trim().eq_ignore_ascii_case(origin))
                {
                    Ok(())
                } else {
                    Err(Violation::BadOrigin)
                }
            }
        }
    }

    /// Check whether a connection that holds `held` subscriptions may
    /// subscribe to one more channel (a repeated `subscribe` for a channel it
    /// holds replaces that subscription and is not checked).
    pub fn check_subscriptions(&self, held: usize) -> Result<(), Violation> {
        if held >= self.max_subscriptions {
            Err(Violation::TooManySubscriptions)
        } else {
            Ok(())
        }
    }

    /// The longest time from a connection's last frame to its reaping:
    /// `ping_interval + pong_timeout`. It is the `Retry-After` hint for a
    /// source at its connection limit ([`SourceLimits`](super::SourceLimits)),
    /// since leaked connections are the usual cause.
    pub fn reap_bound(&self) -> Duration {
        self.ping_interval.saturating_add(self.pong_timeout)
    }

    /// Check whether one more frame of `len` bytes may be queued for a
    /// connection that already has `queued` frames of `queued_bytes` bytes
    /// waiting to be written (into an empty queue, any one frame fits).
    pub fn check_outbound(
        &self,
        queued: usize,
        queued_bytes: usize,
        len: usize,
    ) -> Result<(), Violation> {
        if queued == 0 {
            return Ok(());
        }
        if queued >= self.outbound_queue || queued_bytes.saturating_add(len) > self.outbound_bytes {
            Err(Violation::SlowConsumer)
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
