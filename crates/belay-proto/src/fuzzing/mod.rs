//! The surface the core fuzz targets (`fuzz/fuzz_targets/client_session.rs`,
//! `fuzz/fuzz_targets/server_connection.rs`) and their corpus replay
//! (`crates/belay-server/tests/fuzz_corpus_replay.rs`) call: the client core
//! and the server connection, each driven by a structured sequence of
//! frames, facts, answers, commands and time, with its invariants checked
//! after every step (docs/FUZZING.md). Only with the `fuzzing` feature.

// The harnesses' inputs are plain data for a test harness, not the API: the
// seed writers build them with literals and the harnesses match every variant.
#![allow(clippy::exhaustive_enums, clippy::exhaustive_structs)]

pub mod client_session;
pub mod server_connection;
pub mod unparse;
