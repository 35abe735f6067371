//! Stop: one final close and events ending with `Stopped`, then no output
//! and nothing scheduled.

use proptest::prelude::*;

use crate::support::{check, op, ops, run, setup, Checks};

/// `stop` emits at most one close and events ending with `Stopped`; after
/// it nothing produces output and nothing is scheduled.
#[test]
fn nothing_but_the_final_close_after_stop() {
    let after = proptest::collection::vec(op(), 1..60);
    check((setup(), ops(), after), |(setup, before, after)| {
        let checks = Checks {
            stop: true,
            ..Checks::default()
        };
        let mut driver = run(&setup, &before, checks)?;
        driver.step += 1;
        driver.op = "Stop (forced)".into();
        driver.stop()?;
        prop_assert!(driver.invariants.stopped());
        driver.run(&after)?;
        prop_assert!(driver.jump(10)?, "poll_timeout after stop");
        Ok(())
    });
}
