//! Hysteresis: a `needed` that flips at every heartbeat is damped by the
//! minimum awake time.

use belay_proto::host::{Beat, IdleSleep};
use belay_proto::Instant;

use crate::script::{min_awake_beats, run_script, EVERY, NO, YES};

fn flapping(beats: usize) -> Vec<Beat> {
    (0..beats)
        .map(|i| if i % 2 == 0 { YES } else { NO })
        .collect()
}

#[test]
fn without_a_minimum_a_flapping_flag_connects_at_every_other_beat() {
    let run = run_script(min_awake_beats(0), &flapping(20), &[]);
    assert_eq!(run.starts, 10, "the undamped cost this test guards against");
}

#[test]
fn a_minimum_of_four_beats_cuts_the_connects_of_a_flapping_flag() {
    // Up at beat 0; the NO at beats 1 and 3 are too early; the NO at beat 5
    // (75 s after the wake, past 60 s) sleeps; the YES at 6 wakes; ...
    let run = run_script(min_awake_beats(4), &flapping(20), &[]);
    assert_eq!(run.starts, 4, "wakes at beats 0, 6, 12, 18");
    assert_eq!(run.stops, 4, "sleeps at beats 5, 11, 17, and the stop");
    let up_beats = run.up.iter().filter(|up| **up).count();
    assert_eq!(up_beats, 17, "asleep only at beats 5, 11, 17");
}

#[test]
fn damped_answers_are_counted() {
    let mut sleep = IdleSleep::new(min_awake_beats(4));
    let mut now = Instant::from_millis(0);
    for beat in flapping(6) {
        sleep.handle_beat(now, beat);
        let _ = sleep.poll_action();
        now = now.saturating_add(EVERY);
    }
    let stats = sleep.stats();
    assert_eq!((stats.beats, stats.starts, stats.stops), (6, 1, 1));
    assert_eq!(stats.damped, 2, "the NO at beats 1 and 3");
}

#[test]
fn after_the_minimum_a_single_false_is_enough() {
    let run = run_script(min_awake_beats(2), &[YES, YES, YES, NO], &[]);
    assert_eq!(run.up, [true, true, true, false]);
}
