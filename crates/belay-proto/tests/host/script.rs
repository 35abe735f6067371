//! A scripted host run, as the seed tests it: one heartbeat outcome per
//! interval, the decision's actions applied to a counted session, and the
//! host stopped at the end.

use std::time::Duration;

use belay_proto::host::{Beat, HostAction, IdleSleep, IdleSleepConfig};
use belay_proto::Instant;

/// The default heartbeat interval.
pub(crate) const EVERY: Duration = Duration::from_secs(15);

/// What the run did to its session.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) starts: u32,
    pub(crate) stops: u32,
    /// Whether a session was up after each beat.
    pub(crate) up: Vec<bool>,
}

/// Feed `beats`, one every [`EVERY`], then stop; `drops` lists the beats
/// (by index) after which the session dies on its own.
pub(crate) fn run_script(config: IdleSleepConfig, beats: &[Beat], drops: &[usize]) -> Run {
    let mut sleep = IdleSleep::new(config);
    let mut run = Run::default();
    let mut session_up = false;
    let mut now = Instant::from_millis(0);
    for (index, beat) in beats.iter().enumerate() {
        sleep.handle_beat(now, *beat);
        apply(&mut sleep, &mut run, &mut session_up);
        run.up.push(session_up);
        if drops.contains(&index) && session_up {
            session_up = false;
            sleep.handle_session_ended(now);
        }
        now = now.saturating_add(EVERY);
    }
    sleep.stop(now);
    apply(&mut sleep, &mut run, &mut session_up);
    assert!(!session_up, "stop leaves no session");
    assert!(!sleep.is_awake());
    run
}

fn apply(sleep: &mut IdleSleep, run: &mut Run, session_up: &mut bool) {
    while let Some(action) = sleep.poll_action() {
        match action {
            HostAction::Connect => {
                assert!(!*session_up, "Connect only when no session is up");
                *session_up = true;
                run.starts += 1;
            }
            HostAction::Disconnect => {
                assert!(*session_up, "Disconnect only when a session is up");
                *session_up = false;
                run.stops += 1;
            }
            other => panic!("unexpected action {other:?}"),
        }
    }
}

/// A reply without the field (an older relay).
pub(crate) const SILENT: Beat = Beat::Answered { needed: None };
/// `needed: true`.
pub(crate) const YES: Beat = Beat::Answered { needed: Some(true) };
/// `needed: false`.
pub(crate) const NO: Beat = Beat::Answered {
    needed: Some(false),
};

/// A config whose minimum awake time is `beats` heartbeats.
pub(crate) fn min_awake_beats(beats: u32) -> IdleSleepConfig {
    IdleSleepConfig::default().with_min_awake(EVERY * beats)
}
