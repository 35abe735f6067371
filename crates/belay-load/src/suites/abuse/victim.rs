//! The well-behaved victim: one session from 127.0.0.1, subscribed to the
//! demo's `feed` (a tick every 500 ms), sending an `echo` every 20 ms with
//! a 5 s deadline; and a probe opening a new session from 127.0.0.1 every
//! 500 ms. Both run on their own thread and runtime, so the attacker's
//! tasks never delay them inside this process.
//!
//! Every figure is filed under the [`Phase`] in force when the echo was
//! sent, the probe started, or the gap or disconnect was seen.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::{oneshot, watch};
use tokio::time::{Instant, MissedTickBehavior};
use tokio_websockets::Message;

use super::attack::{failure_kind, field_str};
use crate::clients::target::Target;
use crate::clients::websocket::{self, Session, PONG};
use crate::measure::stats::Latencies;
use crate::LoadError;

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
    /// Offsets skipped within an epoch.
    pub missing_offsets: u64,
    /// `feed` silent for more than 2 s.
    pub stalls: u64,
    /// `unsubscribed` for `feed` (the subscription was lost).
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

/// The echoing, subscribed session.
#[derive(Debug, Default)]
struct Echoer {
    report: VictimReport,
    pending: HashMap<u64, (Instant, Phase)>,
    next_id: u64,
    /// The `feed` position: epoch and last offset.
    position: Option<(String, u64)>,
    last_publication: Option<Instant>,
    stalled: bool,
}

enum Event {
    Tick,
    Frame(Result<Message, String>),
}

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
        let ws = match self.connect(target, Phase::Baseline).await {
            Ok(ws) => ws,
            Err(e) => {
                let _ = ready.send(Err(format!("the victim could not subscribe: {e}")));
                return std::mem::take(&mut self.report);
            }
        };
        let _ = ready.send(Ok(()));
        let mut ws = Some(ws);
        let mut tick = tokio::time::interval(ECHO_EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut done_at: Option<Instant> = None;
        loop {
            let event = tokio::select! {
                _ = tick.tick() => Event::Tick,
                frame = next_frame(ws.as_mut()) => Event::Frame(frame),
            };
            let now = Instant::now();
            let current = *phase.borrow();
            match event {
                Event::Tick => {
                    self.sweep(now, false);
                    if current == Phase::Done {
                        let done = *done_at.get_or_insert(now);
                        if self.pending.is_empty() || now >= done + ECHO_DEADLINE {
                            break;
                        }
                        continue;
                    }
                    self.check_stall(now, current);
                    if ws.is_none() {
                        let started = Instant::now();
                        ws = self.reconnect(target, current).await;
                        // Echoes due while reconnecting were not sent either.
                        let missed =
                            (started.elapsed().as_millis() / ECHO_EVERY.as_millis()) as u64;
                        let stats = self.stats(current);
                        stats.echoes += missed;
                        stats.unanswered += missed;
                    }
                    self.echo(&mut ws, current).await;
                }
                Event::Frame(Ok(message)) => {
                    if let Some(text) = message.as_text() {
                        let answer = self.handle(text, now, current);
                        if let (Some(frame), Some(open)) = (answer, ws.as_mut()) {
                            if let Err(e) = open.send(Message::text(frame)).await {
                                self.disconnected(&mut ws, current, e.to_string());
                            }
                        }
                    }
                }
                Event::Frame(Err(why)) => self.disconnected(&mut ws, current, why),
            }
        }
        self.sweep(Instant::now(), true);
        if let Some(mut open) = ws {
            let _ = open.send(Message::close(None, "")).await;
        }
        std::mem::take(&mut self.report)
    }

    /// Open a session and subscribe to `feed` (resuming from the position
    /// if there is one); `Ok` once `subscribed`.
    async fn connect(&mut self, target: &Target, phase: Phase) -> Result<Session, LoadError> {
        let mut ws = websocket::open(target, Some(VICTIM_IP), PROBE_BOUND).await?;
        ws.send(Message::text(self.subscribe_frame())).await?;
        let confirmed = tokio::time::timeout(PROBE_BOUND, async {
            loop {
                let text = websocket::next_non_ping(&mut ws).await?;
                if websocket::message_type(&text) == Some("subscribed") {
                    return Ok::<_, LoadError>(text);
                }
            }
        })
        .await
        .map_err(|_| LoadError::Timeout("subscribing to feed"))??;
        self.subscribed(&confirmed, Instant::now(), phase);
        Ok(ws)
    }

    /// `subscribe` to `feed`, from the position if there is one.
    fn subscribe_frame(&self) -> String {
        match &self.position {
            Some((epoch, offset)) => format!(
                r#"{{"type":"subscribe","channel":"feed","since":{{"epoch":"{epoch}","offset":{offset}}}}}"#
            ),
            None => r#"{"type":"subscribe","channel":"feed"}"#.to_owned(),
        }
    }

    async fn reconnect(&mut self, target: &Target, phase: Phase) -> Option<Session> {
        match self.connect(target, phase).await {
            Ok(ws) => Some(ws),
            Err(e) => {
                self.report
                    .disconnects
                    .push(format!("{phase:?}: reconnect failed: {e}"));
                None
            }
        }
    }

    async fn echo(&mut self, ws: &mut Option<Session>, phase: Phase) {
        self.stats(phase).echoes += 1;
        let Some(open) = ws.as_mut() else {
            self.stats(phase).unanswered += 1;
            return;
        };
        self.next_id += 1;
        let id = self.next_id;
        let frame = format!(
            r#"{{"type":"request","id":{id},"method":"echo","params":{{"n":{id}}},"timeout_ms":5000}}"#
        );
        self.pending.insert(id, (Instant::now(), phase));
        if let Err(e) = open.send(Message::text(frame)).await {
            self.disconnected(ws, phase, e.to_string());
        }
    }

    /// Handle one text frame; the frame to send back, if any.
    fn handle(&mut self, text: &str, now: Instant, phase: Phase) -> Option<String> {
        match websocket::message_type(text) {
            Some("response") => {
                let id = websocket::field_u64(text, "id")?;
                let (sent, sent_in) = self.pending.remove(&id)?;
                let stats = self.stats(sent_in);
                if text.contains("\"error\":") {
                    stats.error_answers += 1;
                    stats.unanswered += 1;
                } else {
                    stats.answered += 1;
                    stats.latencies.record(now - sent);
                }
            }
            Some("publication") => self.publication(text, now, phase),
            Some("subscribed") => self.subscribed(text, now, phase),
            Some("unsubscribed") => {
                self.stats(phase).lost_subscriptions += 1;
                return Some(self.subscribe_frame());
            }
            Some("ping") => return Some(PONG.to_owned()),
            _ => {}
        }
        None
    }

    fn publication(&mut self, text: &str, now: Instant, phase: Phase) {
        if self.advance(text, phase) {
            self.stats(phase).publications += 1;
            self.last_publication = Some(now);
            self.stalled = false;
        }
    }

    fn subscribed(&mut self, text: &str, now: Instant, phase: Phase) {
        if self.advance(text, phase) {
            self.last_publication.get_or_insert(now);
        }
    }

    /// Move the position to the `epoch`/`offset` of `text` (a
    /// `publication` or `subscribed`), counting skipped offsets; `false`
    /// if it has none.
    fn advance(&mut self, text: &str, phase: Phase) -> bool {
        let (Some(epoch), Some(offset)) = (
            field_str(text, "epoch"),
            websocket::field_u64(text, "offset"),
        ) else {
            return false;
        };
        let last = match &self.position {
            Some((known, last)) if known == epoch => Some(*last),
            _ => None,
        };
        match last {
            Some(last) => {
                let skipped = offset.saturating_sub(last.saturating_add(1));
                self.stats(phase).missing_offsets += skipped;
                if offset > last {
                    self.position = Some((epoch.to_owned(), offset));
                }
            }
            None => self.position = Some((epoch.to_owned(), offset)),
        }
        true
    }

    fn check_stall(&mut self, now: Instant, phase: Phase) {
        let silent = self.last_publication.is_some_and(|t| now - t > FEED_STALL);
        if silent && !self.stalled {
            self.stalled = true;
            self.stats(phase).stalls += 1;
        }
    }

    /// Count echoes past their deadline (or all still pending, if `all`).
    fn sweep(&mut self, now: Instant, all: bool) {
        let late: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, (sent, _))| all || now - *sent >= ECHO_DEADLINE)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            if let Some((_, phase)) = self.pending.remove(&id) {
                self.stats(phase).unanswered += 1;
            }
        }
    }

    fn disconnected(&mut self, ws: &mut Option<Session>, phase: Phase, why: String) {
        if ws.take().is_some() {
            self.stats(phase).disconnects += 1;
            self.report.disconnects.push(format!("{phase:?}: {why}"));
        }
        // Echoes in flight on the lost session will never be answered.
        self.sweep(Instant::now(), true);
    }
}

/// The next frame of `ws` (never, without a session); `Err` when it closed.
async fn next_frame(ws: Option<&mut Session>) -> Result<Message, String> {
    let Some(ws) = ws else {
        return std::future::pending().await;
    };
    match ws.next().await {
        Some(Ok(message)) => match message.as_close() {
            Some((code, reason)) => Err(format!(
                "closed by the server: {} {reason}",
                u16::from(code)
            )),
            None => Ok(message),
        },
        Some(Err(e)) => Err(e.to_string()),
        None => Err("connection closed".into()),
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

    fn publication(offset: u64) -> String {
        format!(
            r#"{{"type":"publication","channel":"feed","epoch":"e1","offset":{offset},"data":{{"tick":{offset}}}}}"#
        )
    }

    #[test]
    fn gaps_are_counted_in_the_phase_they_are_seen() {
        let mut e = Echoer::default();
        let t = Instant::now();
        let subscribed = r#"{"type":"subscribed","channel":"feed","epoch":"e1","offset":4}"#;
        assert_eq!(e.handle(subscribed, t, Phase::Baseline), None);
        e.handle(&publication(5), t, Phase::Baseline);
        e.handle(&publication(8), t, Phase::Abuse);
        e.handle(&publication(8), t, Phase::Abuse); // a repeat is no gap
        assert_eq!(e.report.phases[0].gaps(), 0);
        assert_eq!(e.report.phases[1].missing_offsets, 2);
        assert_eq!(e.report.phases[1].publications, 2);
        // Lost: resubscribe from the position.
        let again = e
            .handle(
                r#"{"type":"unsubscribed","channel":"feed","code":"lagged"}"#,
                t,
                Phase::Abuse,
            )
            .expect("a resubscribe");
        assert!(
            again.contains(r#""since":{"epoch":"e1","offset":8}"#),
            "{again}"
        );
        assert_eq!(e.report.phases[1].gaps(), 3);
        // Silent for more than 2 s: one stall, however long it lasts.
        e.check_stall(t + Duration::from_secs(3), Phase::Recovery);
        e.check_stall(t + Duration::from_secs(4), Phase::Recovery);
        assert_eq!(e.report.phases[2].stalls, 1);
        assert_eq!(
            e.handle(r#"{"type":"ping"}"#, t, Phase::Recovery),
            Some(PONG.to_owned())
        );
    }

    #[test]
    fn echoes_are_answered_failed_or_late() {
        let mut e = Echoer::default();
        let t = Instant::now();
        for id in 1..=3 {
            e.pending.insert(id, (t, Phase::Abuse));
        }
        let later = t + Duration::from_millis(3);
        e.handle(
            r#"{"type":"response","id":1,"result":{"n":1}}"#,
            later,
            Phase::Recovery,
        );
        e.handle(
            r#"{"type":"response","id":2,"error":{"code":"rate_limited"}}"#,
            later,
            Phase::Recovery,
        );
        let during = &e.report.phases[1];
        assert_eq!(
            (during.answered, during.unanswered, during.error_answers),
            (1, 1, 1)
        );
        assert_eq!(during.latencies.len(), 1);
        e.sweep(t + Duration::from_secs(4), false);
        assert_eq!(e.report.phases[1].unanswered, 1);
        e.sweep(t + ECHO_DEADLINE, false);
        assert_eq!(e.report.phases[1].unanswered, 2);
        assert!(e.pending.is_empty());
    }
}
