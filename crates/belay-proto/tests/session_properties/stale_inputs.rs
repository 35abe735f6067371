//! Stale inputs: an input naming a transport that is not current changes
//! nothing observable and produces no output.

use crate::support::{check, ops, run, setup, Checks};

/// An input naming a transport that is not current changes nothing
/// observable and produces no output.
#[test]
fn stale_transport_inputs_never_change_state_or_output() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            stale: true,
            ..Checks::default()
        };
        run(&setup, &ops, checks)?;
        Ok(())
    });
}
