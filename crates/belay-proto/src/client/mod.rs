//! The client's side: the [`Session`](session::Session) and the small
//! machines it composes.
//!
//! ```text
//!  session/        Session: the facade, its reconnect controller (phase, dial,
//!                  backoff and advice after a lost transport), messages, outputs
//!  subscriptions   wanted channels, confirmations, stream positions
//!  registry        requests in flight and how each settles
//!  readiness       the three readiness levels
//!  event           what the application is told
//!  config          the session's configuration
//!  transport       transport ids and the failures a driver reports
//!  transport_choice  WebSocket or the SSE fallback for the next dial, when to
//!                  move back; send_retry: the fallback's sends
//! ```
//!
//! The parts both sides share (messages, close codes, time, rng, heartbeat,
//! backoff) are at the crate's root; the server's decisions are in
//! [`crate::server`]. Every module here is also re-exported at the crate's
//! root under its own name (`belay_proto::session`, `belay_proto::config`, …).

pub mod config;
pub mod event;
pub mod readiness;
pub mod registry;
pub mod session;
pub mod subscriptions;
pub mod transport;
pub mod transport_choice;
