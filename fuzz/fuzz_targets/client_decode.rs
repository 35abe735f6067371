//! The protocol's message decoders (`decode_client`, `decode_server`) on any
//! text: no panic, and what decodes survives re-encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    belay_server::fuzzing::client_decode(data);
});
