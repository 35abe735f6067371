//! Test support for Belay (unpublished).
//!
//! [`Pair`] runs the client core ([`belay_proto::Session`]) against the
//! server core ([`belay_proto::server::Connection`]) over a simulated
//! [`Link`] (latency, loss, one direction frozen, cut), with a
//! [`ModelBroker`] built on the core's `ChannelLog`, all in virtual time: the
//! clock jumps to the next thing due, so minutes of protocol take
//! milliseconds. Modelled on quinn-proto's `Pair`.
//!
//! With the `sockets` feature, the `sockets` module holds the raw protocol client
//! and the HTTP helpers that every crate's socket-level tests use.
//!
//! ```
//! use std::time::Duration;
//! use belay_proto::Config;
//! use belay_test_support::Pair;
//!
//! let mut pair = Pair::new(Config::default(), 1);
//! pair.client.start(pair.now()).unwrap();
//! pair.run_for(Duration::from_secs(1));
//! assert!(pair.client.is_ready());
//! assert_eq!(pair.server_connections(), 1);
//! ```
#![forbid(unsafe_code)]

mod broker;
pub mod fuzz_corpus;
mod link;
mod pair;
#[cfg(feature = "services")]
pub mod services;
#[cfg(feature = "services")]
pub mod serving;
#[cfg(feature = "sockets")]
pub mod sockets;

pub use broker::{ModelBroker, Subscriber};
pub use link::{Direction, Link};
pub use pair::{Pair, ServerRecord};
