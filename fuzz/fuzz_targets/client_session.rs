//! The client core (`belay_proto::Session`) driven in virtual time by a
//! structured sequence of server frames, transport facts, network changes,
//! time moves and commands; checks its invariants after every step (see
//! `belay_fuzz::client_session`).
#![no_main]

use belay_fuzz::client_session::{run, SessionInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: SessionInput| {
    run(&input);
});
