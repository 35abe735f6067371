//! One token against belay-standalone's `JwtAuthenticator`, as a connection
//! token and as a subscription token; byte 0 picks how the rest becomes a
//! token (most are signed with the harness's key, so the claims reach the
//! parser), byte 1 the configuration (see
//! `belay_standalone::fuzzing::jwt_claims`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    belay_standalone::fuzzing::jwt_claims(data);
});
