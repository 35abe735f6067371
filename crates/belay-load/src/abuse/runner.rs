//! The phases of one abuse run: a fresh server, the victim alone
//! (baseline), victim and attacker (abuse), the attacker gone (recovery,
//! until the server's RSS is back within 10 % of its baseline or the
//! recovery bound passes), sampling the server every 500 ms throughout.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use super::attack::Attack;
use super::report::{AbuseReport, Cpu, Rss, RSS_FACTOR};
use super::server::ServerChild;
use super::victim::{Phase, Victim, ECHO_DEADLINE};
use super::Abuse;
use crate::procfs::{ProcSample, CLK_TCK};

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
    /// (at most 600 s).
    pub recovery_max: Duration,
}

impl RunConfig {
    /// `phase`-long baselines and abuses, recoveries of at most 30 s.
    pub fn new(exe: PathBuf, phase: Duration) -> Self {
        RunConfig {
            exe,
            server_args: Vec::new(),
            phase: phase.min(Duration::from_secs(600)),
            recovery_max: Duration::from_secs(30),
        }
    }

    /// The shortest recovery: every echo sent during the abuse gets its
    /// whole 5 s deadline before the run ends.
    pub fn recovery_min(&self) -> Duration {
        (ECHO_DEADLINE + SAMPLE_EVERY).min(self.recovery_max.max(SAMPLE_EVERY))
    }
}

/// Server samples, each with the phase it was taken in.
#[derive(Debug, Default)]
struct Samples {
    taken: Vec<(Phase, Instant, ProcSample)>,
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
            Ok(sample) => self.taken.push((phase, Instant::now(), sample)),
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

    fn of(&self, phase: Phase) -> impl Iterator<Item = &(Phase, Instant, ProcSample)> {
        self.taken.iter().filter(move |s| s.0 == phase)
    }

    fn rss(&self) -> Rss {
        let last = |phase| self.of(phase).last().map_or(0, |s| s.2.rss_kib);
        Rss {
            baseline: last(Phase::Baseline),
            peak: self
                .taken
                .iter()
                .filter(|s| s.0 != Phase::Baseline)
                .map(|s| s.2.rss_kib)
                .max()
                .unwrap_or(0),
            after: last(Phase::Recovery),
        }
    }

    /// CPU % between the first and the last sample of `samples`.
    fn cpu(samples: &[&(Phase, Instant, ProcSample)]) -> f64 {
        let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
            return 0.0;
        };
        let secs = (last.1 - first.1).as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        let ticks = last.2.cpu_ticks.saturating_sub(first.2.cpu_ticks) as f64;
        ticks / CLK_TCK / secs * 100.0
    }

    fn cpu_figures(&self) -> Cpu {
        let base: Vec<_> = self.of(Phase::Baseline).collect();
        // The abuse runs from the last baseline sample to its own last one.
        let mut during: Vec<_> = base.last().copied().into_iter().collect();
        during.extend(self.of(Phase::Abuse));
        let recovery: Vec<_> = self.of(Phase::Recovery).collect();
        let tail = &recovery[recovery.len().saturating_sub(5)..];
        Cpu {
            baseline: Samples::cpu(&base),
            during: Samples::cpu(&during),
            after: Samples::cpu(tail),
        }
    }
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
    let attacking = async {
        // Every attacker stops at `until`; the extra second is a backstop.
        let _ =
            tokio::time::timeout_at(abuse_end + Duration::from_secs(1), abuse.run(&attack)).await;
    };
    let sampling = samples.until(&mut server, Phase::Abuse, abuse_end, |_| false);
    tokio::join!(attacking, sampling);
    let effort = attack.effort.snapshot();
    drop(attack);

    let _ = phase.send(Phase::Recovery);
    let recovery_start = Instant::now();
    let settled_from = recovery_start + config.recovery_min();
    let baseline = samples.rss().baseline as f64;
    samples
        .until(
            &mut server,
            Phase::Recovery,
            recovery_start + config.recovery_max,
            |s| {
                let now = Instant::now();
                now >= settled_from
                    && s.of(Phase::Recovery)
                        .last()
                        .is_some_and(|last| last.2.rss_kib as f64 <= baseline * RSS_FACTOR)
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
