//! The phases of one abuse run: a fresh server, the victim alone
//! (baseline), victim and attacker (abuse), the attacker gone (recovery,
//! until the server's RSS is back within 10 % of its baseline or the
//! recovery bound passes), sampling the server every 500 ms throughout.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::attack::Attack;
use super::attacker;
use super::report::{AbuseReport, Cpu, Rss, RSS_FACTOR};
use super::server::ServerChild;
use super::victim::{Phase, Victim, ECHO_DEADLINE};
use super::Abuse;
use crate::measure::procfs::{self, ProcSample, CLK_TCK};

/// How often the server's RSS and CPU are read.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(500);

/// How to run the abuses.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The `belay` executable (its `serve --demo` is the server).
    pub exe: PathBuf,
    /// Extra flags for `belay serve`, for every abuse.
    pub server_args: Vec<String>,
    /// Length of the baseline and of the abuse (at most 600 s).
    pub phase: Duration,
    /// Longest recovery; it ends earlier once RSS is back within 10 %
    /// (at most 600 s). An abuse whose memory the server keeps by design
    /// gets that long more ([`Abuse::kept_by_design`]).
    pub recovery_max: Duration,
    /// The attacker thread's nice value ([`attacker::DEFAULT_NICE`]; 0:
    /// the victim's priority).
    pub attacker_nice: i32,
}

impl RunConfig {
    /// `phase`-long baselines and abuses, recoveries of at most 30 s.
    pub fn new(exe: PathBuf, phase: Duration) -> Self {
        RunConfig {
            exe,
            server_args: Vec::new(),
            phase: phase.min(Duration::from_secs(600)),
            recovery_max: Duration::from_secs(30),
            attacker_nice: attacker::DEFAULT_NICE,
        }
    }

    /// The shortest recovery: every echo sent during the abuse gets its
    /// whole 5 s deadline before the run ends.
    pub fn recovery_min(&self) -> Duration {
        (ECHO_DEADLINE + SAMPLE_EVERY).min(self.recovery_max.max(SAMPLE_EVERY))
    }
}

/// One reading of the server and of the machine.
#[derive(Debug, Clone, Copy)]
struct Sample {
    phase: Phase,
    at: Instant,
    server: ProcSample,
    /// CPU ticks of everything else on the machine: all CPUs' busy ticks
    /// less the server's and this process's (cumulative, so only
    /// differences mean anything).
    others: u64,
}

/// Server samples, each with the phase it was taken in.
#[derive(Debug, Default)]
struct Samples {
    taken: Vec<Sample>,
    failure: Option<String>,
}

impl Samples {
    fn take(&mut self, server: &mut ServerChild, phase: Phase) {
        if self.failure.is_some() {
            return;
        }
        if let Some(exit) = server.exited() {
            self.failure = Some(exit);
            return;
        }
        match server.sample() {
            Ok(sample) => {
                let own = procfs::sample(std::process::id()).map_or(0, |s| s.cpu_ticks);
                let machine = std::fs::read_to_string("/proc/stat")
                    .ok()
                    .and_then(|text| busy_ticks(&text))
                    .unwrap_or(0);
                self.taken.push(Sample {
                    phase,
                    at: Instant::now(),
                    server: sample,
                    others: machine.saturating_sub(sample.cpu_ticks + own),
                });
            }
            Err(e) => self.failure = Some(e),
        }
    }

    /// Sample every 500 ms until `until`, or until `done` says so.
    async fn until(
        &mut self,
        server: &mut ServerChild,
        phase: Phase,
        until: Instant,
        mut done: impl FnMut(&Samples) -> bool,
    ) {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while Instant::now() < until && self.failure.is_none() && !done(self) {
            tick.tick().await;
            self.take(server, phase);
        }
    }

    fn of(&self, phase: Phase) -> impl Iterator<Item = &Sample> {
        self.taken.iter().filter(move |s| s.phase == phase)
    }

    fn rss(&self) -> Rss {
        let last = |phase| self.of(phase).last().map_or(0, |s| s.server.rss_kib);
        Rss {
            baseline: last(Phase::Baseline),
            peak: self
                .taken
                .iter()
                .filter(|s| s.phase != Phase::Baseline)
                .map(|s| s.server.rss_kib)
                .max()
                .unwrap_or(0),
            after: last(Phase::Recovery),
        }
    }

    /// CPU % of one core between the first and the last of `samples`,
    /// counting the ticks `ticks` reads from a sample.
    fn cpu(samples: &[&Sample], ticks: impl Fn(&Sample) -> u64) -> f64 {
        let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
            return 0.0;
        };
        let secs = (last.at - first.at).as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        ticks(last).saturating_sub(ticks(first)) as f64 / CLK_TCK / secs * 100.0
    }

    fn cpu_figures(&self) -> Cpu {
        let base: Vec<_> = self.of(Phase::Baseline).collect();
        // The abuse runs from the last baseline sample to its own last one.
        let mut during: Vec<_> = base.last().copied().into_iter().collect();
        during.extend(self.of(Phase::Abuse));
        let recovery: Vec<_> = self.of(Phase::Recovery).collect();
        let tail = &recovery[recovery.len().saturating_sub(5)..];
        let server = |s: &Sample| s.server.cpu_ticks;
        let others = |s: &Sample| s.others;
        Cpu {
            baseline: Samples::cpu(&base, server),
            during: Samples::cpu(&during, server),
            after: Samples::cpu(tail, server),
            others_baseline: Samples::cpu(&base, others),
            others_during: Samples::cpu(&during, others),
        }
    }
}

/// Busy ticks of all CPUs from the text of `/proc/stat`: the first eight
/// fields of its `cpu` line less idle and iowait.
pub fn busy_ticks(stat: &str) -> Option<u64> {
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = fields.iter().sum();
    Some(total.saturating_sub(fields.get(3)? + fields.get(4)?))
}

/// Run `abuse` once against a fresh server.
pub async fn run_one(abuse: Abuse, config: &RunConfig) -> Result<AbuseReport, String> {
    let mut server = ServerChild::start(&config.exe, &config.server_args)?;
    let target = server.target.clone();
    let (phase, phase_rx) = watch::channel(Phase::Baseline);
    let victim = Victim::start(target.clone(), phase_rx).await?;
    let mut samples = Samples::default();

    let start = Instant::now();
    samples
        .until(&mut server, Phase::Baseline, start + config.phase, |_| {
            false
        })
        .await;

    let _ = phase.send(Phase::Abuse);
    let attack = Attack::new(target, config.phase);
    let abuse_end = attack.until;
    let attacking = attacker::run(abuse, attack, config.attacker_nice);
    let sampling = samples.until(&mut server, Phase::Abuse, abuse_end, |_| false);
    let (attack, ()) = tokio::join!(attacking, sampling);
    let effort = attack?.effort.snapshot();

    let _ = phase.send(Phase::Recovery);
    let recovery_start = Instant::now();
    let settled_from = recovery_start + config.recovery_min();
    let baseline = samples.rss().baseline as f64;
    samples
        .until(
            &mut server,
            Phase::Recovery,
            recovery_start + config.recovery_max + abuse.kept_by_design(&config.server_args),
            |s| {
                let now = Instant::now();
                now >= settled_from
                    && s.of(Phase::Recovery)
                        .last()
                        .is_some_and(|last| last.server.rss_kib as f64 <= baseline * RSS_FACTOR)
            },
        )
        .await;
    let recovery = recovery_start.elapsed();
    let _ = phase.send(Phase::Done);
    let victim = victim.finish().await;
    if samples.failure.is_none() {
        samples.failure = server.exited();
    }
    Ok(AbuseReport {
        abuse,
        phase: config.phase,
        recovery,
        victim,
        effort,
        rss: samples.rss(),
        cpu: samples.cpu_figures(),
        server_failure: samples.failure.take(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_busy_ticks() {
        let stat = "cpu  100 5 20 1000 7 0 3 2 0 0\ncpu0 50 2 10 500 3 0 1 1 0 0\n";
        assert_eq!(busy_ticks(stat), Some(100 + 5 + 20 + 3 + 2));
        assert_eq!(busy_ticks("intr 1 2 3"), None);
        assert!(busy_ticks(&std::fs::read_to_string("/proc/stat").unwrap_or_default()).is_some());
    }

    #[test]
    fn the_recovery_lasts_for_the_echo_deadline() {
        let config = RunConfig::new("belay".into(), Duration::from_secs(10));
        assert_eq!(config.recovery_min(), Duration::from_millis(5_500));
        let short = RunConfig {
            recovery_max: Duration::from_secs(3),
            ..config
        };
        assert_eq!(short.recovery_min(), Duration::from_secs(3));
    }
}
