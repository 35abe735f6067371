//! Transports: at most one live at a time, with fresh increasing ids, and
//! never alongside a pending reconnect.

use crate::support::{check, ops, run, setup, Checks};

/// At most one live transport, fresh increasing ids, no open while one is
/// live, and a pending reconnect (Waiting) never coexists with a transport.
#[test]
fn at_most_one_live_transport_and_one_pending_reconnect() {
    check((setup(), ops()), |(setup, ops)| {
        let checks = Checks {
            transports: true,
            ..Checks::default()
        };
        run(&setup, &ops, checks)?;
        Ok(())
    });
}
