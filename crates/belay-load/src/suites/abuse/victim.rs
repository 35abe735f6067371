//! The well-behaved victim: one belay-client session (the core's
//! `Session`: it answers pings, comes back after a loss and resumes `feed`
//! from its position) from 127.0.0.1, subscribed to the demo's `feed` (a
//! tick every 500 ms), sending an `echo` every 20 ms with a 5 s deadline;
//! and a probe opening a new session from 127.0.0.1 every 500 ms. Both run on their own thread and runtime, so the attacker's
//! tasks never delay them inside this process.
//!
//! Every figure is filed under the [`Phase`] in force when the echo was
//! sent, the probe started, or the gap or disconnect was seen.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use belay_client::{Client, ClientEvent, Item, RequestError, RequestOptions, Subscription};
use belay_proto::message::RawJson;
use belay_proto::{Config, Event};
use futures_util::SinkExt;
use serde_json::json;
use tokio::sync::{broadcast, oneshot, watch};
use tokio::task::JoinSet;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_websockets::Message;

use super::attack::failure_kind;
use crate::clients::session;
use crate::clients::target::Target;
use crate::clients::websocket;
use crate::measure::stats::Latencies;

/// The victim's address.
pub const VICTIM_IP: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
/// Time between two echoes: 500 samples in a 10 s phase, so its p99 is
/// the 5th largest round trip rather than the largest (at 200 ms, until
/// 2026-12-03, it was the largest of 50: one scheduling hiccup decided it).
pub const ECHO_EVERY: Duration = Duration::from_millis(20);
/// An echo not answered within this is unanswered.
pub const ECHO_DEADLINE: Duration = Duration::from_secs(5);
/// `feed` silent for longer than this (4 ticks late) is a gap.
pub const FEED_STALL: Duration = Duration::from_secs(2);
/// Time between two new-session probes.
pub const PROBE_EVERY: Duration = Duration::from_millis(500);
/// A probe that has no `welcome` within this is refused.
pub const PROBE_BOUND: Duration = Duration::from_secs(5);

/// The part of an abuse run a figure belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The victim alone.
    Baseline = 0,
    /// Victim and attacker.
    Abuse = 1,
    /// The attacker gone, the server settling.
    Recovery = 2,
    /// Finished: the victim settles its last echoes and stops.
    Done = 3,
}

/// The victim's figures for one phase.
#[derive(Debug, Default, Clone)]
pub struct PhaseStats {
    /// Echoes due (one per [`ECHO_EVERY`], whether or not they could be sent).
    pub echoes: u64,
    /// Echoes answered with a result within the deadline.
    pub answered: u64,
    /// Echoes without a result within 5 s: no answer, an error answer, or
    /// not sendable because the victim was disconnected.
    pub unanswered: u64,
    /// Of those, answered with an error.
    pub error_answers: u64,
    /// Round trips of the answered echoes.
    pub latencies: Latencies,
    /// `feed` publications received.
    pub publications: u64,
    /// Offsets skipped within an epoch, plus one for each resync (the
    /// server could not replay what `feed` missed).
    pub missing_offsets: u64,
    /// `feed` silent for more than 2 s.
    pub stalls: u64,
    /// `feed` lost by the service (`unsubscribed`; the core subscribes
    /// again from its position).
    pub lost_subscriptions: u64,
    /// The victim's session dropped.
    pub disconnects: u64,
    /// New-session probes started.
    pub probes: u64,
    /// Probes that did not get `welcome` within 5 s.
    pub probes_refused: u64,
    /// Time from dialing to `welcome` of the probes that got one.
    pub probe_latencies: Latencies,
}

impl PhaseStats {
    /// Publication gaps: offsets skipped, stalls and lost subscriptions.
    pub fn gaps(&self) -> u64 {
        self.missing_offsets + self.stalls + self.lost_subscriptions
    }
}

/// Everything the victim saw.
#[derive(Debug, Default, Clone)]
pub struct VictimReport {
    /// Baseline, abuse and recovery.
    pub phases: [PhaseStats; 3],
    /// Why the victim's session dropped, each time it did.
    pub disconnects: Vec<String>,
    /// Why probes were refused, with counts.
    pub probe_failures: BTreeMap<String, u64>,
}

/// A victim running on its own thread.
#[derive(Debug)]
pub struct Victim {
    thread: std::thread::JoinHandle<VictimReport>,
}

impl Victim {
    /// Start the victim against `target`; it follows `phase` and stops
    /// after [`Phase::Done`]. Returns once the victim is subscribed.
    pub async fn start(target: Target, phase: watch::Receiver<Phase>) -> Result<Victim, String> {
        let (ready_tx, ready_rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("abuse-victim".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build();
                let Ok(runtime) = runtime else {
                    let _ = ready_tx.send(Err("cannot start the victim's runtime".to_owned()));
                    return VictimReport::default();
                };
                runtime.block_on(run(target, phase, ready_tx))
            })
            .map_err(|e| format!("cannot start the victim thread: {e}"))?;
        match ready_rx.await {
            Ok(Ok(())) => Ok(Victim { thread }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the victim stopped before it was subscribed".into()),
        }
    }

    /// Wait for the victim to finish (after [`Phase::Done`]).
    pub async fn finish(self) -> VictimReport {
        tokio::task::spawn_blocking(move || self.thread.join().unwrap_or_default())
            .await
            .unwrap_or_default()
    }
}

async fn run(
    target: Target,
    phase: watch::Receiver<Phase>,
    ready: oneshot::Sender<Result<(), String>>,
) -> VictimReport {
    let mut echo = Echoer::default();
    let probes = probe(&target, phase.clone());
    let (echoed, probed) = tokio::join!(echo.run(&target, phase, ready), probes);
    let mut report = echoed;
    for (stats, probe) in report.phases.iter_mut().zip(probed.0) {
        stats.probes = probe.probes;
        stats.probes_refused = probe.probes_refused;
        stats.probe_latencies = probe.probe_latencies;
    }
    report.probe_failures = probed.1;
    report
}

/// The echoing, subscribed session: a belay-client `Client` (the core's
/// `Session`), which answers the server's pings, comes back after a loss
/// and resumes `feed` from its position.
#[derive(Debug, Default)]
struct Echoer {
    report: VictimReport,
    /// Echoes in flight, by number: the phase they were sent in.
    pending: HashMap<u64, Phase>,
    next_id: u64,
    /// The last `feed` offset delivered (the core keeps the epoch).
    last_offset: Option<u64>,
    last_publication: Option<Instant>,
    stalled: bool,
}

/// A settled echo: its number, when it was sent, and the answer.
type Settled = (u64, Instant, Result<RawJson, RequestError>);

impl Echoer {
    fn stats(&mut self, phase: Phase) -> &mut PhaseStats {
        &mut self.report.phases[(phase as usize).min(2)]
    }

    async fn run(
        &mut self,
        target: &Target,
        phase: watch::Receiver<Phase>,
        ready: oneshot::Sender<Result<(), String>>,
    ) -> VictimReport {
        let (client, mut feed, mut subscription) = match self.connect(target).await {
            Ok(opened) => opened,
            Err(e) => {
                let _ = ready.send(Err(format!("the victim could not subscribe: {e}")));
                return std::mem::take(&mut self.report);
            }
        };
        let _ = ready.send(Ok(()));
        let mut echoes: JoinSet<Settled> = JoinSet::new();
        let mut tick = tokio::time::interval(ECHO_EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut done_at: Option<Instant> = None;
        loop {
            let current = *phase.borrow();
            tokio::select! {
                biased;
                event = session::next_event(&mut feed) => match event {
                    Some(Ok(event)) => self.on_event(&event, Instant::now(), current),
                    Some(Err(e)) => self.report.disconnects.push(format!("{current:?}: {e}")),
                    None => break,
                },
                item = subscription.next() => match item {
                    Some(Item::Publication(publication)) => {
                        self.publication(publication.offset, Instant::now(), current);
                    }
                    Some(Item::Resync) => self.resync(current),
                    Some(other) => {
                        self.report.disconnects.push(format!("{current:?}: feed ended: {other:?}"));
                        break;
                    }
                    None => break,
                },
                Some(settled) = echoes.join_next(), if !echoes.is_empty() => {
                    if let Ok((id, sent, answer)) = settled {
                        self.settled(id, sent, &answer, Instant::now());
                    }
                }
                _ = tick.tick() => {
                    let now = Instant::now();
                    if current == Phase::Done {
                        let done = *done_at.get_or_insert(now);
                        if echoes.is_empty() || now >= done + ECHO_DEADLINE {
                            break;
                        }
                        continue;
                    }
                    self.check_stall(now, current);
                    let (id, options) = self.echo(current);
                    let client = client.clone();
                    echoes.spawn(async move {
                        let sent = Instant::now();
                        let answer = client.request_with("echo", json!({"n": id}), options).await;
                        (id, sent, answer)
                    });
                }
            }
        }
        echoes.abort_all();
        self.sweep();
        client.close().await;
        std::mem::take(&mut self.report)
    }

    /// A client subscribed to `feed`, once the server confirmed it.
    async fn connect(
        &mut self,
        target: &Target,
    ) -> Result<(Client, broadcast::Receiver<ClientEvent>, Subscription), String> {
        let mut config = Config::default();
        config.set_request_timeout(ECHO_DEADLINE);
        let client = session::builder(std::slice::from_ref(target), Some(VICTIM_IP), config, 1)
            .connect()
            .map_err(|e| e.to_string())?;
        let mut feed = client.events();
        let subscription = client.subscribe("feed").await.map_err(|e| e.to_string())?;
        let confirmed = tokio::time::timeout(PROBE_BOUND, async {
            loop {
                match session::next_event(&mut feed).await {
                    Some(Ok(Event::Subscribed { .. })) => return Ok(()),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e),
                    None => return Err("the client stopped".to_owned()),
                }
            }
        })
        .await
        .map_err(|_| "no `subscribed` for feed within 5 s".to_owned())?;
        confirmed?;
        self.last_publication = Some(Instant::now());
        Ok((client, feed, subscription))
    }

    /// An echo is due: count it; its number and options.
    fn echo(&mut self, phase: Phase) -> (u64, RequestOptions) {
        self.stats(phase).echoes += 1;
        self.next_id += 1;
        self.pending.insert(self.next_id, phase);
        (
            self.next_id,
            RequestOptions::default().timeout(ECHO_DEADLINE),
        )
    }

    /// An echo settled: answered within the deadline, or not (no answer,
    /// an error answer, or never sent because the victim was not
    /// connected), in the phase it was sent in.
    fn settled(
        &mut self,
        id: u64,
        sent: Instant,
        answer: &Result<RawJson, RequestError>,
        now: Instant,
    ) {
        let Some(phase) = self.pending.remove(&id) else {
            return;
        };
        let stats = self.stats(phase);
        match answer {
            Ok(_) if now - sent < ECHO_DEADLINE => {
                stats.answered += 1;
                stats.latencies.record(now - sent);
            }
            Err(RequestError::Server { .. }) => {
                stats.error_answers += 1;
                stats.unanswered += 1;
            }
            _ => stats.unanswered += 1,
        }
    }

    fn on_event(&mut self, event: &Event, now: Instant, phase: Phase) {
        match event {
            Event::Disconnected { reason, .. } => {
                self.stats(phase).disconnects += 1;
                self.report
                    .disconnects
                    .push(format!("{phase:?}: {reason:?}"));
            }
            Event::SubscriptionLost { channel, .. } if channel == "feed" => {
                self.stats(phase).lost_subscriptions += 1;
            }
            Event::Subscribed { channel, .. } if channel == "feed" => {
                self.last_publication.get_or_insert(now);
            }
            _ => {}
        }
    }

    /// A `feed` publication (in order, without duplicates, from the core):
    /// offsets skipped count as missing.
    fn publication(&mut self, offset: u64, now: Instant, phase: Phase) {
        if let Some(last) = self.last_offset {
            let skipped = offset.saturating_sub(last.saturating_add(1));
            self.stats(phase).missing_offsets += skipped;
        }
        self.last_offset = Some(offset);
        self.stats(phase).publications += 1;
        self.last_publication = Some(now);
        self.stalled = false;
    }

    /// The server could not replay what `feed` missed: at least one
    /// publication is lost, and offsets start again from the server's.
    fn resync(&mut self, phase: Phase) {
        self.stats(phase).missing_offsets += 1;
        self.last_offset = None;
    }

    fn check_stall(&mut self, now: Instant, phase: Phase) {
        let silent = self.last_publication.is_some_and(|t| now - t > FEED_STALL);
        if silent && !self.stalled {
            self.stalled = true;
            self.stats(phase).stalls += 1;
        }
    }

    /// Echoes still in flight at the end are unanswered.
    fn sweep(&mut self) {
        let phases: Vec<Phase> = self.pending.drain().map(|(_, phase)| phase).collect();
        for phase in phases {
            self.stats(phase).unanswered += 1;
        }
    }
}

/// Probe figures per phase (probes, refused, latencies) and failure kinds.
#[derive(Debug, Default)]
struct ProbeStats {
    probes: u64,
    probes_refused: u64,
    probe_latencies: Latencies,
}

/// Open a new session every 500 ms until [`Phase::Done`].
async fn probe(
    target: &Target,
    phase: watch::Receiver<Phase>,
) -> ([ProbeStats; 3], BTreeMap<String, u64>) {
    let mut stats: [ProbeStats; 3] = Default::default();
    let mut failures = BTreeMap::new();
    let mut tick = tokio::time::interval(PROBE_EVERY);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let current = *phase.borrow();
        if current == Phase::Done {
            break;
        }
        let one = &mut stats[current as usize];
        one.probes += 1;
        let started = Instant::now();
        match websocket::open(target, Some(VICTIM_IP), PROBE_BOUND).await {
            Ok(mut ws) => {
                one.probe_latencies.record(started.elapsed());
                let _ = ws.send(Message::close(None, "")).await;
            }
            Err(e) => {
                one.probes_refused += 1;
                *failures
                    .entry(format!("{current:?}: {}", failure_kind(&e)))
                    .or_default() += 1;
            }
        }
    }
    (stats, failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_counted_in_the_phase_they_are_seen() {
        let mut e = Echoer::default();
        let t = Instant::now();
        e.publication(5, t, Phase::Baseline);
        e.publication(6, t, Phase::Baseline);
        e.publication(9, t, Phase::Abuse);
        assert_eq!(e.report.phases[0].gaps(), 0);
        assert_eq!(e.report.phases[1].missing_offsets, 2);
        assert_eq!(e.report.phases[1].publications, 1);
        let lost = Event::SubscriptionLost {
            channel: "feed".into(),
            code: "lagged".into(),
        };
        e.on_event(&lost, t, Phase::Abuse);
        assert_eq!(e.report.phases[1].gaps(), 3);
        // Not recovered: one lost at least, and offsets start again.
        e.resync(Phase::Recovery);
        e.publication(1, t, Phase::Recovery);
        assert_eq!(e.report.phases[2].missing_offsets, 1);
        // Silent for more than 2 s: one stall, however long it lasts.
        e.check_stall(t + Duration::from_secs(3), Phase::Recovery);
        e.check_stall(t + Duration::from_secs(4), Phase::Recovery);
        assert_eq!(e.report.phases[2].stalls, 1);
    }

    #[test]
    fn echoes_are_answered_failed_or_late() {
        let mut e = Echoer::default();
        let t = Instant::now();
        let ids: Vec<u64> = (0..4).map(|_| e.echo(Phase::Abuse).0).collect();
        let later = t + Duration::from_millis(3);
        let result = RawJson::null();
        e.settled(ids[0], t, &Ok(result.clone()), later);
        let refused = RequestError::Server {
            code: "rate_limited".into(),
            message: String::new(),
            retry_after_ms: None,
        };
        e.settled(ids[1], t, &Err(refused), later);
        e.settled(ids[2], t, &Ok(result), t + ECHO_DEADLINE);
        let during = &e.report.phases[1];
        assert_eq!(during.echoes, 4);
        assert_eq!(
            (during.answered, during.unanswered, during.error_answers),
            (1, 2, 1),
            "answered, refused, answered too late"
        );
        assert_eq!(during.latencies.len(), 1);
        e.sweep();
        assert_eq!(
            e.report.phases[1].unanswered, 3,
            "still in flight at the end"
        );
        assert!(e.pending.is_empty());
    }
}
