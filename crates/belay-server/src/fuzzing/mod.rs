//! What the fuzz targets (`fuzz/`) and the corpus replay test
//! (`tests/fuzz_corpus_replay.rs`) call: the server's WebSocket codec, the
//! connection driver and the protocol codec, each with the invariants a run
//! must keep. Behind the `fuzzing` feature; not part of the public API.
//!
//! * [`ws_frames`] / [`ws_stream`]: a byte stream, split into reads at given
//!   points, through the server's WebSocket codec. The codec's messages, its
//!   verdict (the close code of the first error) and the bytes it writes
//!   (pongs, the close echo) must equal those of an independent whole-stream
//!   reference parser written from RFC 6455 and the rules in `ws/`
//!   — whatever the split points. Every text message is UTF-8, no message is
//!   longer than `max_payload`, and what the codec encodes parses back.
//! * [`client_decode`]: any text through `decode_client` and `decode_server`:
//!   nothing panics, and what decodes re-encodes to an equal message.
//! * [`connection()`]: one whole session, driven by the same
//!   `connection::run` the `/ws` upgrade calls, over an in-memory stream,
//!   fed a sequence of [`FuzzFrame`]s (well-formed protocol messages with
//!   arbitrary fields, raw text, binary, control frames, fragments, raw
//!   bytes, publications). The session must end within a bound once the
//!   client closes; every frame the server writes must be a well-formed
//!   unmasked server frame: a text frame that `decode_server` accepts, a
//!   pong, or one final close with a valid code; the connection must be
//!   unregistered afterwards.
//!
//! Inputs that make a run fail are bugs; the functions panic with a message
//! saying which invariant broke.

mod client_decode;
mod connection;
mod input;
mod reference;
mod seed_inputs;
mod ws_frames;

pub use client_decode::client_decode;
pub use connection::*;
pub use input::*;
pub use seed_inputs::*;
pub use ws_frames::*;
