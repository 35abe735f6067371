//! belay-proto: the sans-IO core of Belay.
//!
//! Every decision Belay makes about a connection lives here, as pure code
//! driven by explicit time: whether the peer is alive ([`heartbeat`]), how
//! ready the connection is ([`readiness`]), how every request settles
//! ([`registry`]), whether subscriptions are confirmed and where they resume
//! ([`subscriptions`]), and when to dial again ([`backoff`], and the
//! reconnect controller inside [`Session`]). The crate does no I/O, never
//! reads a clock and never touches a global random source, so the real
//! clients, the fleet simulator and the tests all run the same decisions.
//!
//! The crate is laid out by side: [`client`] holds the [`Session`] and the
//! machines it composes, [`server`] the server's decisions (the
//! [`server::Connection`] machine per client, and the server-wide
//! [`server::Node`]: registry, drain, access, presence, reserved methods,
//! keyed requests, resident hosts, admission, fleet pacing, as quinn-proto's
//! `Endpoint` is to its connections), and the root what both sides share:
//! [`message`], [`close`] codes, [`time`], [`rng`], [`heartbeat`] and
//! [`backoff`]. With the feature `testing`, `testing` is the harness that
//! runs both ends together in virtual time (`Pair`), and `every_variant`
//! gives the drivers' tests one value of every output they must handle.
//!
//! ```text
//!  ┌────────── driver (tokio client, browser, simulator, test) ──────────┐
//!  │ sockets, timers, clock                                              │
//!  └──┬──────────────────────────────▲──────────────────────────────▲────┘
//!     │ handle_input(now, Input)     │ poll_output() -> Output      │ poll_timeout()
//!     │ handle_timeout(now)          │ (OpenTransport, Transmit,    │
//!     │ start/request/subscribe/…    │  CloseTransport, Event)      │
//!  ┌──▼──────────────────────────────┴──────────────────────────────┴────┐
//!  │ Session: Phase + Backoff │ Heartbeat │ Readiness │ RequestRegistry  │
//!  │                          │ Subscriptions │ message codec            │
//!  └─────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! # The run loop
//!
//! A driver feeds facts in, drains outputs, and sleeps until the next
//! timeout. Here a toy driver whose "server" answers `connect` with
//! `welcome` at once, run in virtual time:
//!
//! ```
//! use belay_proto::message::{ClientMessage, ServerMessage, Welcome, PROTOCOL_VERSION};
//! use belay_proto::{Config, Event, Input, Instant, Output, Session};
//!
//! let mut now = Instant::ZERO;
//! let mut session = Session::new(Config::default(), now, 42);
//! session.start(now).expect("not stopped");
//! let mut inbox: Vec<Input> = Vec::new();
//! let mut events = Vec::new();
//!
//! loop {
//!     while let Some(output) = session.poll_output() {
//!         match output {
//!             // A real driver dials here and reports back when it opens.
//!             Output::OpenTransport { id, .. } => inbox.push(Input::TransportOpened(id)),
//!             Output::Transmit { id, message: ClientMessage::Connect(_) } => {
//!                 let welcome = Welcome {
//!                     session: "s-1".into(),
//!                     protocol: PROTOCOL_VERSION,
//!                     ping_interval_ms: Some(25_000),
//!                     pacing: None,
//!                     expires_in_ms: None,
//!                 };
//!                 inbox.push(Input::Message(id, ServerMessage::Welcome(welcome)));
//!             }
//!             Output::Transmit { .. } | Output::CloseTransport { .. } => {}
//!             Output::Event(event) => events.push(event),
//!             _ => {}
//!         }
//!     }
//!     if session.is_ready() {
//!         break;
//!     }
//!     if let Some(input) = inbox.pop() {
//!         session.handle_input(now, input);
//!     } else if let Some(deadline) = session.poll_timeout() {
//!         now = deadline; // a real driver sleeps until then
//!         session.handle_timeout(now);
//!     }
//! }
//! assert!(events.contains(&Event::Connected { session: "s-1".into() }));
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// Public enums and config structs are `#[non_exhaustive]` (as rustls does); the
// exceptions, types users build with a literal, say why where they are allowed.
#![warn(clippy::exhaustive_enums, clippy::exhaustive_structs)]

// The client's side: Session and the machines it composes.
pub mod client;
// The server's side: Connection, upgrade, admission, history, drain, fleet pacing…
pub mod server;
// Shared by both sides.
pub mod backoff;
pub mod close;
pub mod heartbeat;
pub mod host;
pub mod message;
pub mod rng;
pub mod time;
// The harnesses of the fuzz targets (both sides).
#[cfg(feature = "testing")]
pub mod every_variant;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
// The test harness: Pair (N clients against server connections in virtual
// time) and the one invariant checker (`fuzzing` enables it too).
#[cfg(feature = "testing")]
pub mod testing;

// The client's modules, at the paths they had before the crate was split by side.
pub use client::{
    config, event, readiness, registry, session, subscriptions, transport, transport_choice,
};

/// Reconnect pacing for a fleet: [`server::FleetPacing`], at the path it had
/// before the crate was split by side.
pub mod fleet {
    pub use crate::server::{ClusterCapacity, FleetPacing};
}

pub use close::{CloseCode, CloseInfo};
pub use config::Config;
pub use event::{DisconnectReason, Event, HaltReason, RetryPlan};
pub use readiness::Readiness;
pub use registry::{RequestId, RequestOutcome};
pub use session::{
    Call, ConnectionState, Input, Output, RequestError, Session, SessionStats, Stopped,
    SubscribeError, TokenError, MAX_SERVER_PING_MS, MIN_SERVER_PING_MS,
};
pub use time::Instant;
pub use transport::{Failure, TransportId};
pub use transport_choice::{
    DialOutcome, FallbackConfig, SendOutcome, SendRetry, SendRetryPolicy, SendStep,
    TransportChoice, TransportKind,
};
