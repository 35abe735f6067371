//! From one repetition's observations to its figures. Pure: the times and
//! the observations go in, the figures come out.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use super::observation::{Observation, Outcome, Stamped};
use super::probe::Position;

/// The moments that frame one repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The fault was switched on.
    pub(crate) fault_at: Instant,
    /// The fault was over (the server accepts again, the link is back…).
    pub(crate) fault_end: Instant,
    /// The lab stopped looking.
    pub(crate) stop_at: Instant,
    /// Requests sent later than `stop_at - settle_window` are not counted.
    pub(crate) settle_window: Duration,
}

/// What one repetition measured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepFigures {
    /// From the fault to the client's first "not ready".
    pub detection: Option<Duration>,
    /// From the end of the fault to "ready" (zero if ready at that moment).
    pub ready_after: Option<Duration>,
    /// From the end of the fault to the first publication.
    pub data_after: Option<Duration>,
    /// Requests issued early enough to be due.
    pub requests: u64,
    /// Of those, settled (any outcome) before the lab stopped looking.
    pub settled: u64,
    /// Publications missing without a resync announcing the gap.
    pub lost_silently: u64,
    /// Publications delivered more than once.
    pub duplicates: u64,
    /// Resyncs announced.
    pub resyncs: u64,
    /// Connection attempts while the fault was on.
    pub dials_during_fault: u64,
    /// Connection attempts from the fault's start until the lab stopped
    /// looking (0: the connection stayed up throughout).
    pub dials_since_fault: u64,
    /// The server's open connections once things settled.
    pub server_connections_after: Option<u64>,
    /// The transports the client became ready over, in order, repeats
    /// folded (`websocket`, `sse`; empty for clients that do not say).
    pub transports: Vec<String>,
    /// Whether the client became ready over SSE at some moment after the
    /// fault began (a dial chosen while WebSockets were blocked may open
    /// just after the block ends).
    pub ready_via_sse_since_fault: bool,
    /// The codecs of the readies over WebSocket, in order, repeats folded
    /// (empty for clients not asked for the binary codec).
    pub websocket_codecs: Vec<String>,
    /// Requests sent before the fault and not settled when it began (the
    /// hosted fault: the calls its kill caught at the host).
    pub in_flight_at_fault: u64,
    /// Of those, settled `host_lost`.
    pub in_flight_host_lost: u64,
    /// Of those, settled neither `host_lost` nor with an answer.
    pub in_flight_otherwise: u64,
    /// From the fault to the last of those settling (`None`: one never did
    /// before the lab stopped looking, or there were none).
    pub in_flight_settled_after: Option<Duration>,
    /// From the end of the fault to the first answer to a request sent
    /// after it began.
    pub answered_after: Option<Duration>,
}

/// Compute the figures of one repetition.
pub(crate) fn figures(frame: Frame, seen: &[Stamped], last: Option<&Position>) -> RepFigures {
    let after = |from: Instant, pred: &dyn Fn(&Observation) -> bool| {
        seen.iter()
            .find(|s| s.at >= from && s.at <= frame.stop_at && pred(&s.what))
            .map(|s| s.at.saturating_duration_since(from))
    };
    let ready_at_end = seen
        .iter()
        .rev()
        .filter(|s| s.at <= frame.fault_end)
        .find_map(|s| match s.what {
            Observation::Ready => Some(true),
            Observation::Lost { .. } => Some(false),
            _ => None,
        })
        .unwrap_or(false);
    let (requests, settled) = requests(frame, seen);
    let (lost_silently, duplicates, resyncs) = stream(seen, last);
    let caught = in_flight(frame, seen);
    RepFigures {
        detection: after(frame.fault_at, &|o| matches!(o, Observation::Lost { .. })),
        ready_after: if ready_at_end {
            Some(Duration::ZERO)
        } else {
            after(frame.fault_end, &|o| matches!(o, Observation::Ready))
        },
        data_after: after(frame.fault_end, &|o| matches!(o, Observation::Pub { .. })),
        requests,
        settled,
        lost_silently,
        duplicates,
        resyncs,
        dials_during_fault: seen
            .iter()
            .filter(|s| s.at >= frame.fault_at && s.at <= frame.fault_end)
            .filter(|s| s.what == Observation::Dial)
            .count() as u64,
        dials_since_fault: seen
            .iter()
            .filter(|s| s.at >= frame.fault_at && s.at <= frame.stop_at)
            .filter(|s| s.what == Observation::Dial)
            .count() as u64,
        server_connections_after: None,
        transports: transports(seen, frame.stop_at),
        ready_via_sse_since_fault: seen.iter().any(|s| {
            s.at >= frame.fault_at
                && s.at <= frame.stop_at
                && matches!(&s.what, Observation::Via { transport } if transport == "sse")
        }),
        websocket_codecs: websocket_codecs(seen, frame.stop_at),
        in_flight_at_fault: caught.count,
        in_flight_host_lost: caught.host_lost,
        in_flight_otherwise: caught.otherwise,
        in_flight_settled_after: caught.settled_after,
        answered_after: caught.answered_after,
    }
}

/// What became of the requests the fault caught in flight, and when
/// requests were answered again.
struct InFlight {
    count: u64,
    host_lost: u64,
    otherwise: u64,
    settled_after: Option<Duration>,
    answered_after: Option<Duration>,
}

fn in_flight(frame: Frame, seen: &[Stamped]) -> InFlight {
    let seen: Vec<&Stamped> = seen.iter().filter(|s| s.at <= frame.stop_at).collect();
    let sent: HashMap<u64, Instant> = seen
        .iter()
        .filter_map(|s| match s.what {
            Observation::Sent { id } => Some((id, s.at)),
            _ => None,
        })
        .collect();
    let mut settled: HashMap<u64, (Instant, Outcome)> = HashMap::new();
    for s in &seen {
        if let Observation::Settled { id, outcome } = s.what {
            settled.entry(id).or_insert((s.at, outcome));
        }
    }
    let caught: Vec<u64> = sent
        .iter()
        .filter(|(id, at)| {
            **at < frame.fault_at && !settled.get(id).is_some_and(|(s, _)| *s < frame.fault_at)
        })
        .map(|(id, _)| *id)
        .collect();
    let outcomes: Vec<Option<&(Instant, Outcome)>> =
        caught.iter().map(|id| settled.get(id)).collect();
    let settled_after = if outcomes.is_empty() || outcomes.iter().any(Option::is_none) {
        None
    } else {
        outcomes
            .iter()
            .flatten()
            .map(|(at, _)| at.saturating_duration_since(frame.fault_at))
            .max()
    };
    let answered_after = seen
        .iter()
        .filter(|s| s.at >= frame.fault_at)
        .find(|s| match s.what {
            Observation::Settled {
                id,
                outcome: Outcome::Ok,
            } => sent.get(&id).is_some_and(|at| *at >= frame.fault_at),
            _ => false,
        })
        .map(|s| s.at.saturating_duration_since(frame.fault_end));
    InFlight {
        count: caught.len() as u64,
        host_lost: outcomes
            .iter()
            .flatten()
            .filter(|(_, o)| *o == Outcome::HostLost)
            .count() as u64,
        otherwise: outcomes
            .iter()
            .flatten()
            .filter(|(_, o)| !matches!(o, Outcome::HostLost | Outcome::Ok))
            .count() as u64,
        settled_after,
        answered_after,
    }
}

/// The codec of every ready over WebSocket (a ready with no `via` is one:
/// the client cannot fall back), in order, a repeat folded into one.
fn websocket_codecs(seen: &[Stamped], until: Instant) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut over_sse = false;
    for s in seen.iter().filter(|s| s.at <= until) {
        match &s.what {
            Observation::Ready => over_sse = false,
            Observation::Via { transport } => over_sse = transport == "sse",
            Observation::Codec { codec } if !over_sse && out.last() != Some(codec) => {
                out.push(codec.clone());
            }
            _ => {}
        }
    }
    out
}

/// The transports of every "ready", in order, a repeat folded into one.
fn transports(seen: &[Stamped], until: Instant) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in seen.iter().filter(|s| s.at <= until) {
        if let Observation::Via { transport } = &s.what {
            if out.last() != Some(transport) {
                out.push(transport.clone());
            }
        }
    }
    out
}

fn requests(frame: Frame, seen: &[Stamped]) -> (u64, u64) {
    let due_by = frame
        .stop_at
        .checked_sub(frame.settle_window)
        .unwrap_or(frame.stop_at);
    let due: HashSet<u64> = seen
        .iter()
        .filter(|s| s.at <= due_by)
        .filter_map(|s| match s.what {
            Observation::Sent { id } => Some(id),
            _ => None,
        })
        .collect();
    let settled: HashSet<u64> = seen
        .iter()
        .filter(|s| s.at <= frame.stop_at)
        .filter_map(|s| match s.what {
            Observation::Settled { id, .. } if due.contains(&id) => Some(id),
            _ => None,
        })
        .collect();
    (due.len() as u64, settled.len() as u64)
}

/// Silent losses, duplicates and resyncs of the watched stream, given the
/// channel's last position as the lab saw it at the end.
fn stream(seen: &[Stamped], last: Option<&Position>) -> (u64, u64, u64) {
    let mut lost = 0_u64;
    let mut resyncs = 0_u64;
    let mut counts: HashMap<(&str, u64), u64> = HashMap::new();
    // The last delivered position, and whether a resync came after it.
    let mut at: Option<(&str, u64)> = None;
    let mut announced = false;
    for s in seen {
        match &s.what {
            Observation::Resync => {
                resyncs += 1;
                announced = true;
            }
            Observation::Pub { epoch, offset } => {
                *counts.entry((epoch.as_str(), *offset)).or_default() += 1;
                if let Some((e, o)) = at {
                    if !announced {
                        lost += gap(e, o, epoch, *offset);
                    }
                }
                if !at.is_some_and(|(e, o)| e == epoch && *offset <= o) {
                    at = Some((epoch.as_str(), *offset));
                }
                announced = false;
            }
            _ => {}
        }
    }
    if let (Some((e, o)), Some(end), false) = (at, last, announced) {
        lost += gap(e, o, &end.epoch, end.offset + 1);
    }
    let duplicates = counts.values().map(|n| n - 1).sum();
    (lost, duplicates, resyncs)
}

/// Publications missing between a delivered `(e1, o1)` and the next
/// delivered `(e2, o2)`. Across epochs, everything of the new epoch before
/// `o2` (offsets start at 1) counts, since nothing announced the switch.
fn gap(e1: &str, o1: u64, e2: &str, o2: u64) -> u64 {
    if e1 == e2 {
        o2.saturating_sub(o1).saturating_sub(1)
    } else {
        o2.saturating_sub(1).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Script {
        t0: Instant,
        seen: Vec<Stamped>,
    }

    impl Script {
        fn new() -> Script {
            Script {
                t0: Instant::now(),
                seen: Vec::new(),
            }
        }
        fn at(&mut self, ms: u64, what: Observation) -> &mut Self {
            self.seen.push(Stamped {
                at: self.t0 + Duration::from_millis(ms),
                what,
            });
            self
        }
        fn frame(&self, fault: u64, end: u64, stop: u64) -> Frame {
            Frame {
                fault_at: self.t0 + Duration::from_millis(fault),
                fault_end: self.t0 + Duration::from_millis(end),
                stop_at: self.t0 + Duration::from_millis(stop),
                settle_window: Duration::from_millis(1_500),
            }
        }
    }

    fn publication(offset: u64) -> Observation {
        Observation::Pub {
            epoch: "e".into(),
            offset,
        }
    }

    fn position(offset: u64) -> Position {
        Position {
            epoch: "e".into(),
            offset,
        }
    }

    #[test]
    fn a_detected_freeze_and_a_return() {
        let mut s = Script::new();
        s.at(0, Observation::Ready)
            .at(1_000, Observation::Dial)
            .at(
                3_000,
                Observation::Lost {
                    why: "heartbeat".into(),
                },
            )
            .at(3_100, Observation::Dial)
            .at(5_400, Observation::Dial)
            .at(5_600, Observation::Ready)
            .at(5_700, publication(1));
        let f = figures(s.frame(1_000, 5_000, 9_000), &s.seen, Some(&position(1)));
        assert_eq!(f.detection, Some(Duration::from_millis(2_000)));
        assert_eq!(f.ready_after, Some(Duration::from_millis(600)));
        assert_eq!(f.data_after, Some(Duration::from_millis(700)));
        assert_eq!(f.dials_during_fault, 2);
        assert_eq!(f.dials_since_fault, 3);
    }

    #[test]
    fn a_client_that_never_noticed_is_ready_at_the_end_and_never_detected() {
        let mut s = Script::new();
        s.at(0, Observation::Ready);
        let f = figures(s.frame(1_000, 4_000, 8_000), &s.seen, None);
        assert_eq!(f.detection, None);
        assert_eq!(f.ready_after, Some(Duration::ZERO));
        assert_eq!(f.data_after, None);
    }

    #[test]
    fn requests_due_are_those_sent_before_the_settle_window() {
        let mut s = Script::new();
        s.at(0, Observation::Sent { id: 1 })
            .at(
                100,
                Observation::Settled {
                    id: 1,
                    outcome: Outcome::Ok,
                },
            )
            .at(200, Observation::Sent { id: 2 })
            .at(9_000, Observation::Sent { id: 3 });
        let f = figures(s.frame(1_000, 4_000, 10_000), &s.seen, None);
        assert_eq!((f.requests, f.settled), (2, 1));
    }

    #[test]
    fn calls_caught_by_the_fault_and_the_first_answer_after_it() {
        let mut s = Script::new();
        let settled = |id, outcome| Observation::Settled { id, outcome };
        s.at(0, Observation::Sent { id: 1 })
            .at(500, settled(1, Outcome::Ok))
            .at(600, Observation::Sent { id: 2 })
            .at(800, Observation::Sent { id: 3 })
            .at(3_000, settled(2, Outcome::HostLost))
            .at(4_500, settled(3, Outcome::HostLost))
            .at(1_200, Observation::Sent { id: 4 })
            .at(5_000, settled(4, Outcome::HostLost))
            .at(5_200, Observation::Sent { id: 5 })
            .at(6_300, settled(5, Outcome::Ok));
        s.seen.sort_by_key(|x| x.at);
        let f = figures(s.frame(1_000, 1_300, 20_000), &s.seen, None);
        assert_eq!(
            f.in_flight_at_fault, 2,
            "2 and 3, not 1 (answered) or 4 (sent after)"
        );
        assert_eq!((f.in_flight_host_lost, f.in_flight_otherwise), (2, 0));
        assert_eq!(
            f.in_flight_settled_after,
            Some(Duration::from_millis(3_500))
        );
        assert_eq!(f.answered_after, Some(Duration::from_millis(5_000)));
    }

    #[test]
    fn a_caught_call_that_never_settled_has_no_settle_time() {
        let mut s = Script::new();
        s.at(0, Observation::Sent { id: 1 }).at(
            2_000,
            Observation::Settled {
                id: 2,
                outcome: Outcome::Timeout,
            },
        );
        let f = figures(s.frame(1_000, 1_300, 20_000), &s.seen, None);
        assert_eq!((f.in_flight_at_fault, f.in_flight_settled_after), (1, None));
        assert_eq!(f.answered_after, None);
    }

    #[test]
    fn a_silent_gap_and_a_missing_tail_are_losses() {
        let mut s = Script::new();
        s.at(0, publication(1))
            .at(100, publication(2))
            .at(900, publication(6));
        let f = figures(s.frame(200, 800, 1_000), &s.seen, Some(&position(9)));
        // 3, 4, 5 in the middle; 7, 8, 9 at the tail.
        assert_eq!((f.lost_silently, f.duplicates, f.resyncs), (6, 0, 0));
    }

    #[test]
    fn an_announced_gap_is_not_a_loss() {
        let mut s = Script::new();
        s.at(0, publication(1))
            .at(100, Observation::Resync)
            .at(900, publication(6));
        let f = figures(s.frame(200, 800, 1_000), &s.seen, Some(&position(6)));
        assert_eq!((f.lost_silently, f.duplicates, f.resyncs), (0, 0, 1));
    }

    #[test]
    fn an_epoch_switch_without_resync_is_a_loss_and_replays_are_duplicates() {
        let mut s = Script::new();
        s.at(0, publication(1))
            .at(10, publication(2))
            .at(20, publication(2))
            .at(
                30,
                Observation::Pub {
                    epoch: "f".into(),
                    offset: 3,
                },
            );
        let last = Position {
            epoch: "f".into(),
            offset: 3,
        };
        let f = figures(s.frame(5, 25, 40), &s.seen, Some(&last));
        assert_eq!((f.lost_silently, f.duplicates), (2, 1));
    }
}
