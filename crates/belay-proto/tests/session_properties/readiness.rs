//! Readiness: ready iff all three levels, levels respect their
//! dependencies, and `ReadinessChanged` tracks `readiness()` exactly.

use crate::support::{check, ops, run, setup, Checks};

/// `is_ready` is the conjunction of the three levels, the levels respect
/// their dependencies, and `ReadinessChanged` is edge-triggered and tracks
/// `readiness()` exactly.
#[test]
fn ready_iff_all_three_levels() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            readiness: true,
            ..Checks::default()
        };
        run(&setup, &ops, checks)?;
        Ok(())
    });
}
