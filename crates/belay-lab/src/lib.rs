//! belay-lab: the Belay fault lab (MISSION §10).
//!
//! Two parts: the [`lab`] harness behind `belay lab`, which measures every
//! client (a naive baseline, the Rust client, the browser client) against
//! every fault and writes docs/RESULTS.md (docs/LAB.md); and the fault
//! proxy it uses, described below.
//!
//! The proxy is a userspace TCP fault proxy, in the spirit of
//! Toxiproxy and needing no root: it listens on a loopback address, joins
//! each client to a fresh connection to a loopback upstream, and applies the
//! [`Fault`] in force, switchable at run time through a [`Proxy`] handle or
//! the HTTP [`admin`] endpoint (`belay proxy` on the command line).
//!
//! ```text
//!  client ──▶ proxy listener ──▶ pair task ─┬─ client→server: read ▶ queue ▶ write ─▶ upstream
//!                  ▲                        └─ server→client: write ◀ queue ◀ read ◀─┘
//!       Proxy::set / POST /faults  (watch channel seen by every pair task)
//! ```
//!
//! * [`Fault::Pass`], [`Fault::Blackhole`] (data held), [`Fault::Latency`],
//!   [`Fault::Bandwidth`], [`Fault::Reset`] (RST, optional refusal window),
//!   [`Fault::HalfOpen`] (one direction discarded), [`Fault::DropNew`].
//! * One task per connection pair; at most 16 × 16 KiB buffered per direction.
//! * [`CountersSnapshot`]: connections, bytes each way, bytes dropped, faults.
//! * Every address must be loopback ([`ProxyError::NotLoopback`]).
//!
//! Beyond those whole-proxy faults, each proxy carries a stack of
//! [`Toxic`]s, Toxiproxy-style, each on one [`Stream`] or both, with a
//! `toxicity` (the fraction of connections it applies to): latency with
//! jitter, bandwidth, blackhole, timeout, reset_peer, slow_close, slicer,
//! limit_data, discard, plus refuse and accept_rate on new connections
//! ([`ToxicKind`]). A [`Timeline`] scripts toxic changes over time; a
//! [`Registry`] holds named proxies behind the HTTP [`admin`] API
//! (`docs/PROXY.md`). Every random draw comes from a seeded SplitMix64
//! ([`ProxyBuilder::seed`]), so runs are reproducible.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod admin;
mod counters;
mod direction;
mod fault;
pub mod lab;
mod pair;
mod proxy;
mod state;

mod accept;
mod plan;
mod registry;
mod timeline;
mod toxic;
mod toxic_json;
mod upgrade;

pub use counters::CountersSnapshot;
pub use fault::{Direction, Fault};
pub use proxy::{Proxy, ProxyError};

pub use proxy::ProxyBuilder;
pub use registry::Registry;
pub use timeline::{Action, Step, Timeline};
pub use toxic::{RefuseWith, Stream, Toxic, ToxicKind};
