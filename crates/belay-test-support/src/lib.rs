//! Test support for Belay (unpublished): socket-level helpers.
//!
//! The virtual-time `Pair` (client sessions against server connections
//! over a simulated link) lives in the core, as quinn-proto keeps its own:
//! `belay_proto::testing` (feature `testing`).
//!
//! With the `sockets` feature, the `sockets` module holds the raw protocol client
//! and the HTTP helpers that every crate's socket-level tests use; with
//! `services`, real services (redis-server) on free loopback ports.
#![forbid(unsafe_code)]

pub mod fuzz_corpus;
#[cfg(feature = "services")]
pub mod services;
#[cfg(feature = "services")]
pub mod serving;
#[cfg(feature = "sockets")]
pub mod sockets;
