//! A herd run's report: one JSON object per run (every parameter next to
//! every figure, the per-second series included) and a table over runs.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use super::figures::Figures;
use super::server::{series, ServeProcess};
use super::{HerdConfig, Recovery};
use belay_demo::cost::COST_METRICS_PATH;

/// How long scraping the server's counters may take at the end of a run.
const SCRAPE_BOUND: Duration = Duration::from_secs(10);

/// The returning server's own counters at the end of the run (`None`: it
/// did not answer within 10 s).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerCounts {
    /// `belay_connects_total`: sessions it accepted.
    pub connects: Option<f64>,
    /// `belay_admission_refusals_total`: upgrades refused by admission.
    pub admission_refusals: Option<f64>,
    /// `belay_connection_refusals_total`: TCP connections refused at
    /// accept (pending-upgrade limit).
    pub connection_refusals: Option<f64>,
    /// `belay_injected_handshakes_total`: upgrade requests that paid the
    /// injected handshake cost.
    pub handshakes: Option<f64>,
    /// `belay_injected_cpu_microseconds_total`.
    pub injected_cpu_us: Option<f64>,
}

impl ServerCounts {
    /// Read them from `server`.
    pub async fn scrape(server: &ServeProcess) -> ServerCounts {
        let metrics = server.scrape("/metrics", SCRAPE_BOUND).await.ok();
        let cost = server.scrape(COST_METRICS_PATH, SCRAPE_BOUND).await.ok();
        let get = |text: &Option<String>, name| text.as_deref().and_then(|t| series(t, name));
        ServerCounts {
            connects: get(&metrics, "belay_connects_total"),
            admission_refusals: get(&metrics, "belay_admission_refusals_total"),
            connection_refusals: get(&metrics, "belay_connection_refusals_total"),
            handshakes: get(&cost, "belay_injected_handshakes_total"),
            injected_cpu_us: get(&cost, "belay_injected_cpu_microseconds_total"),
        }
    }
}

/// Everything one run measured, with what it was run with.
#[derive(Debug, Clone)]
pub struct HerdReport {
    /// The run's configuration.
    pub config: HerdConfig,
    /// How long connecting the fleet took before the outage.
    pub ramp: Duration,
    /// When the new server printed that it listens, since the kill.
    pub up_after: Duration,
    /// When the run ended, since the kill.
    pub ended_after: Duration,
    /// Dials and readiness, reduced.
    pub figures: Figures,
    /// The new server's CPU time.
    pub recovery: Recovery,
    /// This process's CPU time (the load generator) from the kill to the end.
    pub load_cpu: Duration,
    /// The new server's counters.
    pub server: ServerCounts,
}

impl HerdReport {
    /// Put a report together.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        config: &HerdConfig,
        ramp: Duration,
        up_after: Duration,
        ended_after: Duration,
        figures: Figures,
        recovery: Recovery,
        load_cpu: Duration,
        server: ServerCounts,
    ) -> HerdReport {
        HerdReport {
            config: config.clone(),
            ramp,
            up_after,
            ended_after,
            figures,
            recovery,
            load_cpu,
            server,
        }
    }

    /// The server's CPU time over the run's time since its return, as a
    /// share of one core.
    pub fn server_utilisation(&self) -> f64 {
        let wall = self.ended_after.saturating_sub(self.up_after).as_secs_f64();
        if wall > 0.0 {
            self.recovery.server_cpu.as_secs_f64() / wall
        } else {
            0.0
        }
    }

    /// The server's mean CPU use over the run's last 10 s, as a share of
    /// one core.
    pub fn server_utilisation_last_10s(&self) -> f64 {
        let samples = &self.recovery.server_cpu_per_s;
        let last = &samples[samples.len().saturating_sub(10)..];
        if last.is_empty() {
            return 0.0;
        }
        last.iter().map(Duration::as_secs_f64).sum::<f64>() / last.len() as f64
    }

    /// Metastable: not every client back within the horizon while the
    /// server works (its last 10 s at ≥ 80 % of its worker threads) and
    /// admits less than a tenth of its accept rate: busy, but not
    /// recovering. (A fleet that is merely waiting out a long backoff
    /// leaves the server idle, and is not metastable.)
    pub fn metastable(&self) -> bool {
        let workers = f64::from(self.config.serve.worker_threads);
        self.figures.t100.is_none()
            && self.server_utilisation_last_10s() >= 0.8 * workers
            && self.figures.goodput_last_10s < 0.1 * self.config.serve.accept_rate
    }

    /// The JSON object of the run (one line of `herd-bench`'s output).
    pub fn to_json(&self) -> Value {
        let c = &self.config;
        let f = &self.figures;
        let secs = |d: Option<Duration>| d.map(|d| round3(d.as_secs_f64()));
        let mut run = json!({
            "policy": c.policy,
            "backoff": c.client_config.backoff(),
            "clients": c.clients,
            "accept_rate": c.serve.accept_rate,
            "expected_clients": c.serve.expected_clients,
            "down_s": c.down.as_secs_f64(),
            "horizon_s": c.horizon.as_secs_f64(),
            "handshake_cost_us": c.serve.handshake_cost_us,
            "session_cost_us": c.serve.session_cost_us,
            "worker_threads": c.serve.worker_threads,
            "server_cpus": c.serve.cpus,
            "max_pending_upgrades": c.serve.max_pending_upgrades,
            "connect_timeout_ms": c.client_config.connect_timeout().as_millis() as u64,
            "reset_after_ms": c.client_config.reset_after().as_millis() as u64,
            "seed": c.seed,
        });
        let figures = json!({
            "ramp_rate": c.ramp_rate,
            "ramp_s": round3(self.ramp.as_secs_f64()),
            "up_after_s": round3(self.up_after.as_secs_f64()),
            "ended_after_s": round3(self.ended_after.as_secs_f64()),
            "noticed": f.noticed,
            "peak_after_return": f.peak_after_return,
            "attempts_total": f.attempts_total,
            "attempts_while_down": f.attempts_while_down,
            "attempts_while_starting": f.attempts_while_starting,
            "attempts_after_return": f.attempts_after_return,
            "attempts_per_client_after_return":
                round3(f.attempts_after_return as f64 / c.clients as f64),
            "t50_s": secs(f.t50),
            "t99_s": secs(f.t99),
            "t100_s": secs(f.t100),
            "connected_at_end": f.connected_at_end,
            "goodput_last_10s_per_s": round3(f.goodput_last_10s),
            "metastable": self.metastable(),
            "server_cpu_s": round3(self.recovery.server_cpu.as_secs_f64()),
            "server_utilisation": round3(self.server_utilisation()),
            "server_utilisation_last_10s": round3(self.server_utilisation_last_10s()),
            "load_cpu_s": round3(self.load_cpu.as_secs_f64()),
            "listen_overflows": self.recovery.listen_drops.overflows,
            "listen_drops": self.recovery.listen_drops.drops,
            "syn_queue_full_drops": self.recovery.listen_drops.syn_queue_full,
            "server_connects": self.server.connects,
            "server_admission_refusals": self.server.admission_refusals,
            "server_connection_refusals": self.server.connection_refusals,
            "server_handshakes": self.server.handshakes,
            "server_injected_cpu_s": self.server.injected_cpu_us.map(|us| round3(us / 1e6)),
            "attempts_per_s": f.attempts_per_s,
            "connected_per_s": f.connected_per_s,
            "server_cpu_ms_per_s": self.recovery.server_cpu_per_s.iter()
                .map(|d| d.as_millis() as u64).collect::<Vec<_>>(),
        });
        if let (Value::Object(run), Value::Object(figures)) = (&mut run, figures) {
            run.extend(figures);
        }
        run
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A table of `reports`, one row per run.
pub fn table(reports: &[HerdReport]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| policy | peak/s after return | attempts after return | per client | attempts from kill | 50 % | 99 % | all | server CPU (share of a core) | load CPU | server handshakes | listen-queue drops | metastable |"
    );
    let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|");
    let at = |d: Option<Duration>, horizon: Duration| match d {
        Some(d) => format!("{:.1} s", d.as_secs_f64()),
        None => format!("not within {} s", horizon.as_secs()),
    };
    for r in reports {
        let f = &r.figures;
        let h = r.config.horizon;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.2} | {} | {} | {} | {} | {:.1} s ({:.0} %) | {:.1} s | {} | {} | {} |",
            r.config.policy,
            f.peak_after_return,
            f.attempts_after_return,
            f.attempts_after_return as f64 / r.config.clients as f64,
            f.attempts_total,
            at(f.t50, h),
            at(f.t99, h),
            at(f.t100, h),
            r.recovery.server_cpu.as_secs_f64(),
            100.0 * r.server_utilisation(),
            r.load_cpu.as_secs_f64(),
            r.server
                .handshakes
                .map_or_else(|| "–".to_owned(), |h| format!("{h:.0}")),
            r.recovery.listen_drops.drops,
            if r.metastable() { "yes" } else { "no" },
        );
    }
    out
}
