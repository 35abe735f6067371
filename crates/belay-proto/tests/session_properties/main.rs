//! Session properties under random interleavings, in virtual time.
//!
//! The generator mixes transport facts for the current transport and for
//! stale (replaced, or never opened) ones, network changes, commands and time
//! moves (small steps, jumps to `poll_timeout`, suspends, and an earlier
//! `now` now and then). The driver is model-light: it does not predict what
//! the session should do; it records what the session asked for (transports
//! opened and closed, requests accepted, readiness announced, delays
//! announced) and what it fed in, and checks after every step that the
//! session's answers stay consistent with that record. The checks are the
//! core's one checker (`belay_proto::testing::invariants`, which Pair and
//! the fuzz targets use too); the stale-input and busy-loop checks are the
//! driver's own.
//!
//! Each property is its own test and only checks its own invariants, so a
//! failure names the property that broke. Failing sequences shrink to a
//! minimal op list; plain `#[test]` reproducers, next to the property they
//! broke, pin every bug found. One property family per module; the run
//! configuration, the generator and the driver are in `support`.

mod support;

mod all_invariants;
mod delays;
mod readiness;
mod requests;
mod stale_inputs;
mod stop;
mod time;
mod transports;
