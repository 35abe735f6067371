//! Prometheus metrics, per server instance.
//!
//! Counters are plain atomics owned by one `Server`, rendered in the
//! Prometheus text format at `/metrics`. (A process-global recorder would mix
//! the figures of several servers in one process, as the tests run them.)

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// The close codes counted under their own label (spec/PROTOCOL.md §7,
/// and 1005, a close frame without a code).
const DOCUMENTED_CLOSE_CODES: [u16; 17] = [
    1000, 1001, 1002, 1005, 1006, 1007, 1008, 1009, 1011, 1012, 1013, 4000, 4001, 4003, 4008, 4009,
    4029,
];

/// The key under which [`Metrics::closes_by_code`] counts every close code
/// outside the documented ones (label `code="other"` in `/metrics`); no
/// close frame carries 0, so it never stands for a real code.
pub const OTHER_CLOSE_CODES: u16 = 0;

/// Counters and gauges of one server.
#[derive(Debug, Default)]
pub struct Metrics {
    pub(crate) open_connections: AtomicI64,
    pub(crate) connects: AtomicU64,
    pub(crate) closes_by_code: Mutex<BTreeMap<u16, u64>>,
    pub(crate) pings_sent: AtomicU64,
    pub(crate) zombies_reaped: AtomicU64,
    pub(crate) requests_by_outcome: Mutex<BTreeMap<&'static str, u64>>,
    pub(crate) publications: AtomicU64,
    pub(crate) deliveries: AtomicU64,
    pub(crate) recoveries: AtomicU64,
    pub(crate) recovery_misses: AtomicU64,
    pub(crate) subscribe_refusals: AtomicU64,
    pub(crate) admission_refusals: AtomicU64,
    pub(crate) drain_advised: AtomicU64,
    pub(crate) drain_remaining: AtomicI64,
    pub(crate) bad_frames: AtomicU64,
    pub(crate) paced_frames: AtomicU64,
    pub(crate) connection_refusals: AtomicU64,
    pub(crate) violations_by_name: Mutex<BTreeMap<&'static str, u64>>,
}

impl Metrics {
    /// Connections open right now.
    pub fn open_connections(&self) -> i64 {
        self.open_connections.load(Ordering::Relaxed)
    }

    /// Sessions accepted since start.
    pub fn connects(&self) -> u64 {
        self.connects.load(Ordering::Relaxed)
    }

    /// Live publications handed to this node's connections (one per
    /// subscriber and publication), since start.
    pub fn deliveries(&self) -> u64 {
        self.deliveries.load(Ordering::Relaxed)
    }

    /// Connections reaped because they stopped answering.
    pub fn zombies_reaped(&self) -> u64 {
        self.zombies_reaped.load(Ordering::Relaxed)
    }

    /// Upgrade attempts refused by admission control.
    pub fn admission_refusals(&self) -> u64 {
        self.admission_refusals.load(Ordering::Relaxed)
    }

    /// Publications accepted by the broker since start.
    pub fn publications(&self) -> u64 {
        self.publications.load(Ordering::Relaxed)
    }

    /// Resumed subscriptions replayed in full since start.
    pub fn recoveries(&self) -> u64 {
        self.recoveries.load(Ordering::Relaxed)
    }

    /// Resumed subscriptions answered `recovered: false` since start.
    pub fn recovery_misses(&self) -> u64 {
        self.recovery_misses.load(Ordering::Relaxed)
    }

    /// Subscribes refused by a limit since start.
    pub fn subscribe_refusals(&self) -> u64 {
        self.subscribe_refusals.load(Ordering::Relaxed)
    }

    /// Pings sent to quiet connections since start.
    pub fn pings_sent(&self) -> u64 {
        self.pings_sent.load(Ordering::Relaxed)
    }

    /// TCP connections refused at accept since start.
    pub fn connection_refusals(&self) -> u64 {
        self.connection_refusals.load(Ordering::Relaxed)
    }

    /// Frames rejected as malformed since start.
    pub fn bad_frames(&self) -> u64 {
        self.bad_frames.load(Ordering::Relaxed)
    }

    /// Frames after which a connection's reads waited for its source's
    /// share of the work.
    pub fn paced_frames(&self) -> u64 {
        self.paced_frames.load(Ordering::Relaxed)
    }

    /// Closes the server observed or sent, by code: the codes
    /// spec/PROTOCOL.md documents, and [`OTHER_CLOSE_CODES`] for every
    /// other one (a peer chooses its close code: its choices must not
    /// grow the label set).
    pub fn closes_by_code(&self) -> BTreeMap<u16, u64> {
        lock(&self.closes_by_code).clone()
    }

    /// Requests settled, by outcome (`ok`, `error`, `unanswered`…).
    pub fn requests_by_outcome(&self) -> BTreeMap<&'static str, u64> {
        lock(&self.requests_by_outcome).clone()
    }

    pub(crate) fn count_close(&self, code: u16) {
        let label = if DOCUMENTED_CLOSE_CODES.contains(&code) {
            code
        } else {
            OTHER_CLOSE_CODES
        };
        *lock(&self.closes_by_code).entry(label).or_default() += 1;
    }

    /// Violations answered, by name (`belay_proto::server::Violation::name`).
    pub fn violations_by_name(&self) -> BTreeMap<&'static str, u64> {
        lock(&self.violations_by_name).clone()
    }

    pub(crate) fn count_violation(&self, name: &'static str) {
        *lock(&self.violations_by_name).entry(name).or_default() += 1;
    }

    pub(crate) fn count_request(&self, outcome: &'static str) {
        *lock(&self.requests_by_outcome).entry(outcome).or_default() += 1;
    }

    pub(crate) fn add(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut gauge = |name: &str, help: &str, value: i64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        };
        gauge(
            "belay_connections_open",
            "Connections open now.",
            self.open_connections(),
        );
        gauge(
            "belay_drain_remaining",
            "Connections left to close in a drain.",
            self.drain_remaining.load(Ordering::Relaxed),
        );
        let counters: [(&str, &str, &AtomicU64); 13] = [
            (
                "belay_connection_refusals_total",
                "TCP connections refused at accept (per-source or pending-upgrade limits).",
                &self.connection_refusals,
            ),
            ("belay_connects_total", "Sessions accepted.", &self.connects),
            (
                "belay_paced_frames_total",
                "Frames after which reads waited for the source's share of the work.",
                &self.paced_frames,
            ),
            (
                "belay_pings_sent_total",
                "Pings sent to quiet connections.",
                &self.pings_sent,
            ),
            (
                "belay_zombies_reaped_total",
                "Connections reaped for not answering.",
                &self.zombies_reaped,
            ),
            (
                "belay_publications_total",
                "Publications accepted by the broker.",
                &self.publications,
            ),
            (
                "belay_deliveries_total",
                "Live publications handed to this node's connections (one per subscriber).",
                &self.deliveries,
            ),
            (
                "belay_recoveries_total",
                "Resumed subscriptions replayed in full.",
                &self.recoveries,
            ),
            (
                "belay_recovery_misses_total",
                "Resumed subscriptions answered recovered=false.",
                &self.recovery_misses,
            ),
            (
                "belay_subscribe_refusals_total",
                "Subscribes refused by a limit (subscriptions per connection, channels).",
                &self.subscribe_refusals,
            ),
            (
                "belay_admission_refusals_total",
                "Upgrades refused by admission control.",
                &self.admission_refusals,
            ),
            (
                "belay_drain_advised_total",
                "Connections advised to reconnect by a drain.",
                &self.drain_advised,
            ),
            (
                "belay_bad_frames_total",
                "Frames rejected as malformed.",
                &self.bad_frames,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP belay_closes_total Connection closes by close code.\n# TYPE belay_closes_total counter"
        );
        for (code, n) in self.closes_by_code() {
            if code == OTHER_CLOSE_CODES {
                let _ = writeln!(out, "belay_closes_total{{code=\"other\"}} {n}");
            } else {
                let _ = writeln!(out, "belay_closes_total{{code=\"{code}\"}} {n}");
            }
        }
        let _ = writeln!(
            out,
            "# HELP belay_requests_total Requests by outcome.\n# TYPE belay_requests_total counter"
        );
        for (outcome, n) in self.requests_by_outcome() {
            let _ = writeln!(out, "belay_requests_total{{outcome=\"{outcome}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP belay_violations_total Bad input and limits answered, by kind.\n# TYPE belay_violations_total counter"
        );
        for (kind, n) in self.violations_by_name() {
            let _ = writeln!(out, "belay_violations_total{{kind=\"{kind}\"}} {n}");
        }
        out
    }
}

/// Lock a mutex, recovering the data if a panicking thread poisoned it
/// (counters stay usable).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_lists_every_family_with_labels() {
        let m = Metrics::default();
        m.open_connections.store(3, Ordering::Relaxed);
        m.count_close(1012);
        m.count_close(1012);
        m.count_request("ok");
        let text = m.render();
        assert!(text.contains("belay_connections_open 3"));
        assert!(text.contains("belay_closes_total{code=\"1012\"} 2"));
        assert!(text.contains("belay_requests_total{outcome=\"ok\"} 1"));
        assert!(text.contains("# TYPE belay_zombies_reaped_total counter"));
    }
}
