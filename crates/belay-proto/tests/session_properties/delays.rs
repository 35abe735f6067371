//! Reconnect delays: every announced delay, and every delay the backoff
//! alone computes, stays within its policy's cap.

use std::time::Duration;

use belay_proto::backoff::{Backoff, BackoffPolicy, PacingSlots, RetryWindow};
use belay_proto::rng::{RandomSource, RecordedDraws, SplitMix64};
use belay_proto::Instant;
use proptest::prelude::*;

use crate::support::{advice_ms, check, ops, run, setup, Checks};

/// Every announced reconnect delay stays within its policy's cap (or the
/// hint cap after advice), doubled at most once after deploy advice.
#[test]
fn no_delay_exceeds_its_policys_cap() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            delays: true,
            ..Checks::default()
        };
        let mut driver = run(&setup, &ops, checks)?;
        driver.jump(200)?;
        Ok(())
    });
}

// The backoff alone, without a session.

#[derive(Debug, Clone)]
enum BackoffOp {
    /// Advance the clock (ms), then ask for a delay.
    Delay(u64),
    Reset,
    Slots(Option<(u64, u64)>),
    Advise(u64, u64),
}

fn backoff_op() -> impl Strategy<Value = BackoffOp> {
    prop_oneof![
        10 => prop_oneof![0u64..100, 0u64..1_000_000].prop_map(BackoffOp::Delay),
        1 => Just(BackoffOp::Reset),
        2 => proptest::option::of((0u64..1_000_000, 0u64..1_000_000)).prop_map(BackoffOp::Slots),
        2 => (advice_ms(), advice_ms()).prop_map(|(min, max)| BackoffOp::Advise(min, max)),
    ]
}

fn draw() -> impl Strategy<Value = f64> {
    prop_oneof![
        8 => 0.0f64..1.0,
        1 => Just(0.0),
        1 => Just(1.0 - f64::EPSILON),
        1 => Just(1.0),
        1 => Just(f64::NAN),
        1 => Just(-0.5),
        1 => Just(7.0),
    ]
}

/// For every reference policy, whatever the draws, slots, advice and
/// (forward-moving) time, `next_delay` never exceeds `max_delay()` as it
/// stood before the call.
#[test]
fn backoff_next_delay_never_exceeds_max_delay() {
    let strategy = (
        0..BackoffPolicy::all_reference().len(),
        proptest::option::of(proptest::collection::vec(draw(), 0..20)),
        any::<u64>(),
        prop_oneof![0u64..1_000_000_000, Just(u64::MAX - 10_000_000)],
        proptest::collection::vec(backoff_op(), 1..200),
    );
    check(strategy, |(policy, recorded, seed, start, ops)| {
        let policy = BackoffPolicy::all_reference()[policy].clone();
        let mut backoff = Backoff::new(policy.clone());
        let mut rng: Box<dyn RandomSource> = match recorded {
            Some(draws) => Box::new(RecordedDraws::new(draws)),
            None => Box::new(SplitMix64::new(seed)),
        };
        let mut now = Instant::from_micros(start);
        for op in &ops {
            match op {
                BackoffOp::Delay(ms) => {
                    now = now + Duration::from_millis(*ms);
                    let max = backoff.max_delay();
                    let delay = backoff.next_delay(now, rng.as_mut());
                    prop_assert!(delay <= max, "{policy:?} at {now:?}: {delay:?} > {max:?}");
                }
                BackoffOp::Reset => backoff.reset(),
                BackoffOp::Slots(slots) => backoff.set_slots(slots.map(|(period, phase)| {
                    PacingSlots::new(
                        Duration::from_millis(period),
                        Duration::from_millis(phase),
                        now,
                    )
                })),
                BackoffOp::Advise(min, max) => backoff.advise(RetryWindow::from_advice(
                    now,
                    Duration::from_millis(*min),
                    Duration::from_millis(*max),
                )),
            }
        }
        Ok(())
    });
}
