use std::time::Duration;

use super::*;

const T0: Instant = Instant::ZERO;

fn ms(n: u64) -> Instant {
    Instant::from_millis(n)
}

#[test]
fn a_frame_costs_one_unit_and_one_more_per_256_bytes() {
    assert_eq!(work_units(0), 1);
    assert_eq!(work_units(255), 1);
    assert_eq!(work_units(256), 2);
    assert_eq!(work_units(60 * 1024), 241);
    assert_eq!(work_units(usize::MAX), u32::MAX);
}

#[test]
fn within_the_burst_every_frame_goes_at_once() {
    let mut pacer = WorkPacer::new(T0);
    for _ in 0..500 {
        assert_eq!(pacer.reserve(T0, 1, 1_000.0, 500), None);
    }
    assert!(!pacer.is_full(T0));
    assert!(pacer.is_full(ms(500)), "refilled after burst / rate");
}

#[test]
fn past_the_burst_frames_are_spread_at_the_rate_each_at_its_own_time() {
    let mut pacer = WorkPacer::new(T0);
    for _ in 0..10 {
        assert_eq!(pacer.reserve(T0, 1, 1_000.0, 10), None);
    }
    // 1,000 units/s: each further unit one millisecond after the last.
    assert_eq!(pacer.reserve(T0, 1, 1_000.0, 10), Some(ms(1)));
    assert_eq!(pacer.reserve(T0, 1, 1_000.0, 10), Some(ms(2)));
    assert_eq!(pacer.reserve(T0, 5, 1_000.0, 10), Some(ms(7)));
    // Handled on time, the next frame waits only for its own cost.
    assert_eq!(pacer.reserve(ms(7), 1, 1_000.0, 10), Some(ms(8)));
}

#[test]
fn a_source_that_pauses_gets_its_burst_back() {
    let mut pacer = WorkPacer::new(T0);
    assert_eq!(pacer.reserve(T0, 20, 1_000.0, 10), Some(ms(10)));
    assert_eq!(pacer.reserve(ms(40), 10, 1_000.0, 10), None);
}

#[test]
fn no_frame_waits_longer_than_the_longest_wait_and_the_excess_is_forgiven() {
    let mut pacer = WorkPacer::new(T0);
    // 1,000 frames of 241 units at 1,000 units/s would owe four minutes.
    for _ in 0..1_000 {
        if let Some(at) = pacer.reserve(T0, 241, 1_000.0, 500) {
            assert!(at <= T0 + MAX_WORK_WAIT);
        }
    }
    assert_eq!(
        pacer.reserve(T0, 241, 1_000.0, 500),
        Some(T0 + MAX_WORK_WAIT)
    );
    // Once that wait is over, the debt is what one more frame costs.
    let later = T0 + MAX_WORK_WAIT;
    let next = pacer.reserve(later, 241, 1_000.0, 500).unwrap();
    assert_eq!(next, later + Duration::from_millis(241));
}

#[test]
fn a_rate_of_zero_or_nan_means_no_share() {
    let mut pacer = WorkPacer::new(T0);
    for rate in [0.0, -1.0, f64::NAN] {
        for _ in 0..10_000 {
            assert_eq!(pacer.reserve(T0, 1_000, rate, 0), None);
        }
    }
    assert!(pacer.is_full(T0));
}
