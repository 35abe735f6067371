//! The reply is tri-state: only an explicit `needed: false` disconnects.

use belay_proto::host::Beat;

use crate::script::{min_awake_beats, run_script, Run, NO, SILENT, YES};

#[test]
fn an_older_server_without_the_field_keeps_one_connection_for_the_whole_run() {
    let run = run_script(min_awake_beats(0), &[SILENT, SILENT, SILENT], &[]);
    assert_eq!((run.starts, run.stops), (1, 1));
    assert_eq!(run.up, [true, true, true]);
}

#[test]
fn an_explicit_false_disconnects() {
    let run = run_script(min_awake_beats(0), &[YES, NO, NO], &[]);
    assert_eq!(
        run,
        Run {
            starts: 1,
            stops: 1,
            up: vec![true, false, false]
        }
    );
}

#[test]
fn a_false_before_any_session_never_connects() {
    let run = run_script(min_awake_beats(0), &[NO, NO], &[]);
    assert_eq!((run.starts, run.stops), (0, 0));
}

#[test]
fn a_failed_heartbeat_keeps_the_connection() {
    let run = run_script(
        min_awake_beats(0),
        &[YES, Beat::Failed, Beat::Failed, YES],
        &[],
    );
    assert_eq!((run.starts, run.stops), (1, 1));
    assert_eq!(run.up, [true, true, true, true]);
}

#[test]
fn a_failed_first_heartbeat_connects() {
    let run = run_script(min_awake_beats(0), &[Beat::Failed], &[]);
    assert_eq!((run.starts, run.stops), (1, 1));
}

#[test]
fn a_needed_session_that_dropped_is_restarted_at_the_next_heartbeat() {
    // The session dies after beat 0; beat 1 starts a new one.
    let run = run_script(min_awake_beats(0), &[YES, YES, YES], &[0]);
    assert_eq!(run.starts, 2);
    assert_eq!(
        run.stops, 1,
        "the drop is not a stop; the end stops the second"
    );
    assert_eq!(run.up, [true, true, true]);
}

#[test]
fn the_next_yes_after_a_sleep_wakes_the_host() {
    let run = run_script(min_awake_beats(0), &[YES, NO, YES], &[]);
    assert_eq!((run.starts, run.stops), (2, 2));
    assert_eq!(run.up, [true, false, true]);
}
