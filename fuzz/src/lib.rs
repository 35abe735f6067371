//! Harness code of the fuzz targets that do not live in
//! `belay_server::fuzzing` (see docs/FUZZING.md).
//!
//! * [`client_session`]: the client core (`belay_proto::Session`) driven by
//!   a structured sequence of transport facts, server frames, commands and
//!   time, with its invariants checked after every step.
//!
//! The module depends only on `belay-proto`, `arbitrary` and `serde_json`,
//! so it can move into a crate's `fuzzing` module unchanged once a stable
//! corpus replay for it is wanted in the test command.
#![forbid(unsafe_code)]

pub mod client_session;
