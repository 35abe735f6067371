//! One whole server session (the `/ws` connection driver) fed a structured
//! sequence of client frames; checks every frame the server writes.
#![no_main]

use belay_server::fuzzing::FuzzFrame;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|frames: Vec<FuzzFrame>| {
    belay_server::fuzzing::connection(&frames);
});
