//! Toxics: the stackable faults of a proxy, each on one or both directions.
//!
//! A [`Toxic`] is a [`ToxicKind`] (what it does, with its parameters), the
//! [`Stream`] it acts on, a unique name and a `toxicity` (the fraction of
//! connections it applies to, decided per connection with the proxy's seeded
//! random source). Their JSON shape follows Toxiproxy's:
//!
//! ```json
//! {"name":"lag","type":"latency","stream":"downstream","toxicity":1.0,
//!  "attributes":{"latency_ms":200,"jitter_ms":50}}
//! ```
//!
//! Every field but `type` may be left out (`name`: `<type>_<stream>`,
//! `stream`: `both`, `toxicity`: 1, `attributes`: the kind's defaults).

use serde::{Deserialize, Serialize};

use crate::fault::Direction;

/// The largest delay, timeout or window accepted (ten minutes).
pub(crate) const MAX_MS: u64 = 600_000;
/// The largest average slice accepted (1 MiB).
const MAX_SLICE: u64 = 1 << 20;

/// The direction(s) a toxic acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Stream {
    /// Client to server (Toxiproxy's `upstream`).
    Upstream,
    /// Server to client (Toxiproxy's `downstream`).
    Downstream,
    /// Both directions (the default).
    #[default]
    Both,
}

impl Stream {
    /// Whether bytes travelling `direction` are on this stream.
    pub fn covers(self, direction: Direction) -> bool {
        matches!(
            (self, direction),
            (Stream::Both, _)
                | (Stream::Upstream, Direction::ClientToServer)
                | (Stream::Downstream, Direction::ServerToClient)
        )
    }

    /// The stream of `direction` alone.
    pub fn of(direction: Direction) -> Stream {
        match direction {
            Direction::ClientToServer => Stream::Upstream,
            Direction::ServerToClient => Stream::Downstream,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Stream::Upstream => "upstream",
            Stream::Downstream => "downstream",
            Stream::Both => "both",
        }
    }
}

/// How a refused connection is turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RefuseWith {
    /// Accept, then close with an RST: the client's connect succeeds and its
    /// first read fails with "connection reset" (the default).
    #[default]
    Reset,
    /// Accept, then close normally (a FIN, no data).
    Close,
}

/// What a toxic does. In JSON the variant is the `type` field and its
/// fields are the `attributes`; times are in milliseconds unless named
/// otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum ToxicKind {
    /// Delay each chunk by `latency_ms`, plus or minus a uniform draw of up
    /// to `jitter_ms` (seeded). Order is kept. Stacked latencies add up.
    Latency {
        /// The delay added one way.
        latency_ms: u64,
        /// The largest deviation from `latency_ms` either way.
        #[serde(default)]
        jitter_ms: u64,
    },
    /// Cap the stream at `bytes_per_sec` per connection (the lowest cap wins).
    Bandwidth {
        /// Bytes per second (at least 1).
        bytes_per_sec: u64,
    },
    /// Stop forwarding without closing anything (the elevator): the proxy
    /// stops reading, so bytes and FINs are **held** in bounded buffers and
    /// delivered in order once the toxic is removed.
    Blackhole,
    /// Hold the stream like [`ToxicKind::Blackhole`], then close the whole
    /// connection (both sockets) `timeout_ms` after the toxic took effect on
    /// it; 0: never close, hold until removed.
    Timeout {
        /// Delay before the close; 0: never.
        #[serde(default)]
        timeout_ms: u64,
    },
    /// Close the whole connection with an RST (`SO_LINGER` 0) `timeout_ms`
    /// after the toxic took effect on it (0: at once, new connections too).
    ResetPeer {
        /// Delay before the reset; 0: at once.
        #[serde(default)]
        timeout_ms: u64,
    },
    /// Delay the close (FIN) travelling this stream by `delay_ms`.
    SlowClose {
        /// Delay before the FIN is forwarded.
        delay_ms: u64,
    },
    /// Split data into slices of `average_size` ± `size_variation` bytes
    /// (seeded) and wait `delay_us` microseconds between slices.
    Slicer {
        /// Average slice size in bytes (1 to 1 MiB).
        average_size: u64,
        /// Largest deviation from the average (below `average_size`).
        #[serde(default)]
        size_variation: u64,
        /// Pause between slices, in microseconds.
        #[serde(default)]
        delay_us: u64,
    },
    /// Forward `bytes` more bytes on this stream, then close the whole
    /// connection.
    LimitData {
        /// Bytes let through after the toxic took effect.
        bytes: u64,
    },
    /// Read and silently discard the stream's bytes; both sockets stay open
    /// and a FIN on this stream is withheld until the toxic is removed
    /// (a half-open path).
    Discard,
    /// Turn away every new connection while present (the stream is ignored;
    /// `toxicity` makes it turn away a fraction of them).
    Refuse {
        /// RST or FIN.
        #[serde(default)]
        with: RefuseWith,
    },
    /// Answer each new connection whose first request asks for an upgrade
    /// (a WebSocket) with `403 Forbidden` and close it, as a proxy that
    /// blocks WebSockets does; any other request passes (its head is read
    /// first, up to 16 KiB or 10 s, then forwarded). Connections already
    /// open are untouched; the stream is ignored.
    RefuseUpgrades,
    /// Let at most `max` new connections through per `window_ms` (a sliding
    /// window); the excess is reset at once. The stream is ignored.
    AcceptRate {
        /// Connections per window (at least 1).
        max: u32,
        /// The window, in milliseconds (default 1000: per second).
        #[serde(default = "one_second")]
        window_ms: u64,
    },
}

fn one_second() -> u64 {
    1000
}

impl ToxicKind {
    /// The `type` name in JSON.
    pub fn type_name(&self) -> &'static str {
        match self {
            ToxicKind::Latency { .. } => "latency",
            ToxicKind::Bandwidth { .. } => "bandwidth",
            ToxicKind::Blackhole => "blackhole",
            ToxicKind::Timeout { .. } => "timeout",
            ToxicKind::ResetPeer { .. } => "reset_peer",
            ToxicKind::SlowClose { .. } => "slow_close",
            ToxicKind::Slicer { .. } => "slicer",
            ToxicKind::LimitData { .. } => "limit_data",
            ToxicKind::Discard => "discard",
            ToxicKind::Refuse { .. } => "refuse",
            ToxicKind::RefuseUpgrades => "refuse_upgrades",
            ToxicKind::AcceptRate { .. } => "accept_rate",
        }
    }

    /// Check the parameters; the message says what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        let name = self.type_name();
        let at_most = |field: &str, value: u64| {
            if value > MAX_MS {
                Err(format!("{name}: {field} must be at most {MAX_MS}"))
            } else {
                Ok(())
            }
        };
        match *self {
            ToxicKind::Latency {
                latency_ms,
                jitter_ms,
            } => at_most("latency_ms", latency_ms).and(at_most("jitter_ms", jitter_ms)),
            ToxicKind::Bandwidth { bytes_per_sec: 0 } => {
                Err(format!("{name}: bytes_per_sec must be at least 1"))
            }
            ToxicKind::Timeout { timeout_ms } | ToxicKind::ResetPeer { timeout_ms } => {
                at_most("timeout_ms", timeout_ms)
            }
            ToxicKind::SlowClose { delay_ms } => at_most("delay_ms", delay_ms),
            ToxicKind::Slicer {
                average_size,
                size_variation,
                delay_us,
            } => {
                if !(1..=MAX_SLICE).contains(&average_size) {
                    Err(format!(
                        "{name}: average_size must be between 1 and {MAX_SLICE}"
                    ))
                } else if size_variation >= average_size {
                    Err(format!("{name}: size_variation must be below average_size"))
                } else {
                    at_most("delay_us / 1000", delay_us / 1000)
                }
            }
            ToxicKind::AcceptRate { max, window_ms } => {
                if max == 0 {
                    Err(format!(
                        "{name}: max must be at least 1 (use refuse to turn all away)"
                    ))
                } else if window_ms == 0 {
                    Err(format!("{name}: window_ms must be at least 1"))
                } else {
                    at_most("window_ms", window_ms)
                }
            }
            _ => Ok(()),
        }
    }
}

/// One toxic: a [`ToxicKind`] on a [`Stream`], named, with a toxicity.
///
/// ```
/// use belay_lab::{Stream, Toxic, ToxicKind};
/// let lag = Toxic::new(ToxicKind::Latency { latency_ms: 200, jitter_ms: 20 })
///     .named("lag")
///     .on(Stream::Downstream)
///     .with_toxicity(0.5);
/// assert_eq!(lag.name(), "lag");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    try_from = "crate::toxic_json::ToxicJson",
    into = "crate::toxic_json::ToxicJson"
)]
pub struct Toxic {
    pub(crate) name: String,
    pub(crate) stream: Stream,
    pub(crate) toxicity: f64,
    pub(crate) kind: ToxicKind,
}

impl Toxic {
    /// `kind` on both streams, applied to every connection, named after its
    /// type and stream (`latency_both`).
    pub fn new(kind: ToxicKind) -> Toxic {
        Toxic {
            name: default_name(&kind, Stream::Both),
            stream: Stream::Both,
            toxicity: 1.0,
            kind,
        }
    }

    /// Rename it (names are unique within a proxy).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Toxic {
        self.name = name.into();
        self
    }

    /// Act on `stream` only (renamed `<type>_<stream>` if it had its
    /// default name).
    #[must_use]
    pub fn on(mut self, stream: Stream) -> Toxic {
        if self.name == default_name(&self.kind, self.stream) {
            self.name = default_name(&self.kind, stream);
        }
        self.stream = stream;
        self
    }

    /// Apply to this fraction of connections (0 to 1), drawn per
    /// connection from the proxy's seeded random source.
    #[must_use]
    pub fn with_toxicity(mut self, toxicity: f64) -> Toxic {
        self.toxicity = toxicity;
        self
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The stream it acts on.
    pub fn stream(&self) -> Stream {
        self.stream
    }

    /// The fraction of connections it applies to.
    pub fn toxicity(&self) -> f64 {
        self.toxicity
    }

    /// What it does.
    pub fn kind(&self) -> &ToxicKind {
        &self.kind
    }

    /// Check the name, the toxicity and the parameters.
    pub fn validate(&self) -> Result<(), String> {
        validate_name(&self.name)?;
        if !(0.0..=1.0).contains(&self.toxicity) {
            return Err(format!(
                "toxic {:?}: toxicity must be between 0 and 1, not {}",
                self.name, self.toxicity
            ));
        }
        self.kind
            .validate()
            .map_err(|e| format!("toxic {:?}: {e}", self.name))
    }
}

/// `<type>_<stream>`, Toxiproxy's default name.
pub(crate) fn default_name(kind: &ToxicKind, stream: Stream) -> String {
    format!("{}_{}", kind.type_name(), stream.label())
}

/// Names: 1 to 64 characters among letters, digits, `_`, `-` and `.`.
pub(crate) fn validate_name(name: &str) -> Result<(), String> {
    let fine = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || name.len() > 64 || !name.chars().all(fine) {
        Err(format!(
            "the name {name:?} must be 1 to 64 letters, digits, '_', '-' or '.'"
        ))
    } else {
        Ok(())
    }
}
