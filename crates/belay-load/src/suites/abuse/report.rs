//! What one abuse run measured, the verdict per criterion, and the
//! markdown and JSON forms of the report.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use super::attack::EffortSnapshot;
use super::victim::{PhaseStats, VictimReport};
use super::Abuse;
use crate::measure::stats::Latencies;

/// The victim's p99 during the abuse may be at most this many times its
/// baseline p99 …
pub const P99_FACTOR: f64 = 2.0;
/// … where a baseline below this counts as this (sub-millisecond noise on
/// an idle loopback would otherwise make the ratio meaningless).
pub const P99_FLOOR: Duration = Duration::from_millis(1);
/// The server's RSS after recovery may be at most this times its baseline.
pub const RSS_FACTOR: f64 = 1.10;

/// Server RSS over a run, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Rss {
    /// At the end of the baseline.
    pub baseline: u64,
    /// The highest sample during the abuse and the recovery.
    pub peak: u64,
    /// At the end of the recovery.
    pub after: u64,
}

/// Server CPU, in percent of one core.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cpu {
    /// Over the baseline.
    pub baseline: f64,
    /// Over the abuse.
    pub during: f64,
    /// Over the last 2 s of the recovery.
    pub after: f64,
    /// Every other process on the machine (the harness excluded), over
    /// the baseline: what the victim competed with besides the attack.
    pub others_baseline: f64,
    /// Every other process on the machine, over the abuse.
    pub others_during: f64,
}

/// One abuse run.
#[derive(Debug, Clone)]
pub struct AbuseReport {
    /// Which abuse.
    pub abuse: Abuse,
    /// Length of the baseline and of the abuse.
    pub phase: Duration,
    /// How long the recovery lasted.
    pub recovery: Duration,
    /// What the victim saw.
    pub victim: VictimReport,
    /// What the attacker did and was answered.
    pub effort: EffortSnapshot,
    /// Server RSS.
    pub rss: Rss,
    /// Server CPU.
    pub cpu: Cpu,
    /// The server process died or could not be read.
    pub server_failure: Option<String>,
}

/// The verdict on each criterion (`true`: met).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdicts {
    /// Victim p99 during ≤ 2 × max(baseline p99, 1 ms).
    pub p99: bool,
    /// No echo sent during the abuse or the recovery went unanswered.
    pub unanswered: bool,
    /// No publication gap during the abuse or the recovery.
    pub gaps: bool,
    /// The victim's session never dropped.
    pub connected: bool,
    /// Every new-session probe during the abuse and the recovery got in.
    pub admitted: bool,
    /// RSS after recovery ≤ 1.10 × baseline.
    pub rss: bool,
    /// The server process survived.
    pub alive: bool,
}

impl Verdicts {
    /// Whether every criterion is met.
    pub fn all(&self) -> bool {
        self.failed().is_empty()
    }

    /// The names of the criteria not met.
    pub fn failed(&self) -> Vec<&'static str> {
        [
            (self.p99, "p99"),
            (self.unanswered, "unanswered"),
            (self.gaps, "gaps"),
            (self.connected, "dropped"),
            (self.admitted, "admission"),
            (self.rss, "rss"),
            (self.alive, "server died"),
        ]
        .into_iter()
        .filter(|(ok, _)| !ok)
        .map(|(_, name)| name)
        .collect()
    }
}

impl AbuseReport {
    /// The victim's figures in the baseline.
    pub fn baseline(&self) -> &PhaseStats {
        &self.victim.phases[0]
    }

    /// The victim's figures during the abuse.
    pub fn during(&self) -> &PhaseStats {
        &self.victim.phases[1]
    }

    /// The victim's figures in the recovery.
    pub fn recovery_stats(&self) -> &PhaseStats {
        &self.victim.phases[2]
    }

    /// During p99 over the floored baseline p99 (`None` without answers).
    pub fn p99_ratio(&self) -> Option<f64> {
        let base = percentile(&self.baseline().latencies, 99.0)?.max(P99_FLOOR);
        let during = percentile(&self.during().latencies, 99.0)?;
        Some(during.as_secs_f64() / base.as_secs_f64())
    }

    /// Echoes without a result, during the abuse and the recovery.
    pub fn unanswered(&self) -> u64 {
        self.during().unanswered + self.recovery_stats().unanswered
    }

    /// Publication gaps during the abuse and the recovery.
    pub fn gaps(&self) -> u64 {
        self.during().gaps() + self.recovery_stats().gaps()
    }

    /// Victim disconnects during the abuse and the recovery.
    pub fn disconnects(&self) -> u64 {
        self.during().disconnects + self.recovery_stats().disconnects
    }

    /// New-session probes refused during the abuse and the recovery, and
    /// how many there were.
    pub fn probes_refused(&self) -> (u64, u64) {
        let (d, r) = (self.during(), self.recovery_stats());
        (d.probes_refused + r.probes_refused, d.probes + r.probes)
    }

    /// RSS after recovery over baseline.
    pub fn rss_ratio(&self) -> f64 {
        self.rss.after as f64 / self.rss.baseline.max(1) as f64
    }

    /// The verdict on each criterion.
    pub fn verdicts(&self) -> Verdicts {
        Verdicts {
            p99: self.p99_ratio().is_some_and(|r| r <= P99_FACTOR),
            unanswered: self.unanswered() == 0,
            gaps: self.gaps() == 0,
            connected: self.disconnects() == 0,
            admitted: self.probes_refused().0 == 0,
            rss: self.rss.baseline > 0 && self.rss.after > 0 && self.rss_ratio() <= RSS_FACTOR,
            alive: self.server_failure.is_none(),
        }
    }

    /// The report as JSON (every figure, for scripts and tests).
    pub fn to_json(&self) -> Value {
        let phase = |p: &PhaseStats| {
            json!({
                "echoes": p.echoes,
                "answered": p.answered,
                "unanswered": p.unanswered,
                "error_answers": p.error_answers,
                "p50_ms": ms(percentile(&p.latencies, 50.0)),
                "p99_ms": ms(percentile(&p.latencies, 99.0)),
                "publications": p.publications,
                "missing_offsets": p.missing_offsets,
                "stalls": p.stalls,
                "lost_subscriptions": p.lost_subscriptions,
                "gaps": p.gaps(),
                "disconnects": p.disconnects,
                "probes": p.probes,
                "probes_refused": p.probes_refused,
                "probe_p99_ms": ms(percentile(&p.probe_latencies, 99.0)),
            })
        };
        let v = self.verdicts();
        let e = &self.effort;
        json!({
            "abuse": self.abuse.name(),
            "phase_secs": self.phase.as_secs_f64(),
            "recovery_secs": self.recovery.as_secs_f64(),
            "baseline": phase(self.baseline()),
            "during": phase(self.during()),
            "recovery": phase(self.recovery_stats()),
            "victim_disconnects": self.victim.disconnects,
            "probe_failures": self.victim.probe_failures,
            "effort": {
                "connections": e.connections,
                "refused": e.refused,
                "sent": e.sent,
                "bytes": e.bytes,
                "received": e.received,
                "notes": e.notes,
            },
            "rss_kib": {"baseline": self.rss.baseline, "peak": self.rss.peak, "after": self.rss.after},
            "cpu_percent": {"baseline": self.cpu.baseline, "during": self.cpu.during, "after": self.cpu.after},
            "others_cpu_percent": {"baseline": self.cpu.others_baseline, "during": self.cpu.others_during},
            "p99_ratio": self.p99_ratio(),
            "rss_ratio": self.rss_ratio(),
            "server_failure": self.server_failure,
            "failed": v.failed(),
            "pass": v.all(),
        })
    }
}

fn percentile(latencies: &Latencies, p: f64) -> Option<Duration> {
    latencies.clone().percentile(p)
}

fn ms(d: Option<Duration>) -> Option<f64> {
    d.map(|d| (d.as_secs_f64() * 1e6).round() / 1e3)
}

fn fmt_ms(d: Option<Duration>) -> String {
    ms(d).map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// The results table: one row per abuse.
pub fn markdown(reports: &[AbuseReport]) -> String {
    let mut out = String::new();
    out.push_str("| abuse | echo p50 ms (base → during) | echo p99 ms (base → during) | p99 ratio | unanswered | gaps | victim dropped | new sessions refused | RSS MiB base / peak / after | after / base | server CPU % base / during / after | other processes' CPU % base / during | verdict |\n");
    out.push_str("|---|---|---|---:|---:|---:|---:|---:|---|---:|---|---|---|\n");
    for r in reports {
        let (b, d) = (r.baseline(), r.during());
        let (refused, probes) = r.probes_refused();
        let failed = r.verdicts().failed();
        let verdict = if failed.is_empty() {
            "pass".to_owned()
        } else {
            format!("**FAIL**: {}", failed.join(", "))
        };
        let _ = writeln!(
            out,
            "| {} | {} → {} | {} → {} | {} | {} | {} | {} | {refused} / {probes} | {} / {} / {} | {:.2} | {:.0} / {:.0} / {:.0} | {:.0} / {:.0} | {verdict} |",
            r.abuse.name(),
            fmt_ms(percentile(&b.latencies, 50.0)),
            fmt_ms(percentile(&d.latencies, 50.0)),
            fmt_ms(percentile(&b.latencies, 99.0)),
            fmt_ms(percentile(&d.latencies, 99.0)),
            r.p99_ratio().map_or_else(|| "-".into(), |x| format!("{x:.2}")),
            r.unanswered(),
            r.gaps(),
            r.disconnects(),
            mib(r.rss.baseline),
            mib(r.rss.peak),
            mib(r.rss.after),
            r.rss_ratio(),
            r.cpu.baseline,
            r.cpu.during,
            r.cpu.after,
            r.cpu.others_baseline,
            r.cpu.others_during,
        );
    }
    out
}

/// The attacker's effort and what the server answered, one row per abuse.
pub fn effort_markdown(reports: &[AbuseReport]) -> String {
    let mut out = String::new();
    out.push_str(
        "| abuse | opened | refused | sent | MiB sent | received | most frequent outcomes |\n",
    );
    out.push_str("|---|---:|---:|---:|---:|---:|---|\n");
    for r in reports {
        let e = &r.effort;
        let mut notes: Vec<(&String, &u64)> = e.notes.iter().collect();
        notes.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = notes
            .iter()
            .take(6)
            .map(|(what, n)| format!("{what} ×{n}"))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.1} | {} | {} |",
            r.abuse.name(),
            e.connections,
            e.refused,
            e.sent,
            e.bytes as f64 / (1024.0 * 1024.0),
            e.received,
            top.join(", ").replace('|', "/"),
        );
    }
    out
}

/// Anything odd per abuse: victim disconnects, refused probes, a dead server.
pub fn incidents(reports: &[AbuseReport]) -> String {
    let mut out = String::new();
    for r in reports {
        let mut lines: Vec<String> = r.victim.disconnects.iter().take(5).cloned().collect();
        lines.extend(
            r.victim
                .probe_failures
                .iter()
                .map(|(why, n)| format!("probe refused ({why}) ×{n}")),
        );
        lines.extend(r.server_failure.clone());
        if !lines.is_empty() {
            let _ = writeln!(out, "- **{}**: {}", r.abuse.name(), lines.join("; "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(base_us: &[u64], during_us: &[u64]) -> AbuseReport {
        let mut victim = VictimReport::default();
        for (phase, values) in [(0, base_us), (1, during_us)] {
            for v in values {
                victim.phases[phase].latencies.record_micros(*v);
            }
        }
        AbuseReport {
            abuse: Abuse::JsonPingFlood,
            phase: Duration::from_secs(10),
            recovery: Duration::from_secs(5),
            victim,
            effort: EffortSnapshot::default(),
            rss: Rss {
                baseline: 10_240,
                peak: 20_480,
                after: 11_000,
            },
            cpu: Cpu::default(),
            server_failure: None,
        }
    }

    #[test]
    fn the_baseline_p99_has_a_floor() {
        // 0.2 ms baseline, 1.8 ms during: 1.8 × the 1 ms floor, a pass.
        let r = report(&[200, 150], &[1_800, 300]);
        assert!((r.p99_ratio().expect("answers") - 1.8).abs() < 1e-9);
        assert!(r.verdicts().p99);
        let slow = report(&[3_000], &[7_000]);
        assert!(!slow.verdicts().p99);
        assert!(!report(&[3_000], &[]).verdicts().p99);
    }

    #[test]
    fn verdicts_name_what_failed() {
        let mut r = report(&[500], &[500]);
        assert!(r.verdicts().all(), "{:?}", r.verdicts().failed());
        r.rss.after = 12_000;
        r.victim.phases[2].stalls = 1;
        assert_eq!(r.verdicts().failed(), vec!["gaps", "rss"]);
        let table = markdown(&[r.clone()]);
        assert!(table.contains("| json-ping-flood |"), "{table}");
        assert!(table.contains("**FAIL**: gaps, rss"), "{table}");
        assert_eq!(r.to_json()["pass"], false);
    }
}
