//! One HTTP request (or the same twice) through belay-standalone's HTTP
//! server API merged with the server's routes, in process, on a fresh
//! server; checks the status, the error body, the key and the bounds (see
//! `belay_standalone::fuzzing::http_api`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    belay_standalone::fuzzing::http_api(data);
});
