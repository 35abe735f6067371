//! Requests: every accepted request settles exactly once, by its deadline
//! at the latest, and all settle on stop.

use proptest::prelude::*;

use crate::support::{check, ops, run, setup, Checks};

/// Every accepted request settles exactly once, never later than the
/// first `handle_timeout` at or after its deadline, and all settle on stop.
#[test]
fn every_request_settles_no_later_than_its_deadline() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            requests: true,
            ..Checks::default()
        };
        let mut driver = run(&setup, &ops, checks)?;
        driver.step += 1;
        driver.op = "final stop".into();
        driver.stop()?;
        prop_assert!(driver.invariants.unsettled().is_empty());
        Ok(())
    });
}
