//! The server core (`belay_proto::server::Connection`) driven in virtual
//! time by a structured sequence of client frames, transport facts, answers
//! to its questions, live deliveries, commands and time moves; checks its
//! invariants after every step (see `belay_fuzz::server_connection`).
#![no_main]

use belay_fuzz::server_connection::{run, ConnectionInput};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: ConnectionInput| {
    run(&input);
});
