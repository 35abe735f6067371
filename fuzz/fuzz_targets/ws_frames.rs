//! The server's WebSocket frame parser, fed a byte stream split into reads
//! at points the input chooses, against a whole-stream reference parser.
//! Input: split seed byte, limit byte, stream (see `fuzzing::ws_frames`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    belay_server::fuzzing::ws_frames(data);
});
