//! The surface the client-core fuzz target (`fuzz/fuzz_targets/client_session.rs`)
//! and its corpus replay (`tests/fuzz_corpus_replay.rs`) call: the client
//! core driven by a structured sequence of transport facts, server frames,
//! commands and time, with its invariants checked after every step
//! (docs/FUZZING.md). Only with the `fuzzing` feature.

pub mod client_session;
pub mod unparse;
