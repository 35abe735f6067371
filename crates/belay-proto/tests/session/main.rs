//! Session behaviour, one scenario per test, in virtual time. One behaviour
//! per module; the shared driver is `tests/common`, the message builders
//! only these scenarios use are in `support`.

#[path = "../common/mod.rs"]
mod common;
mod support;

mod advice;
mod binary_frames;
mod frames;
mod halts;
mod handshake;
mod heartbeat;
mod leaving;
mod liveness;
mod network;
mod pacing;
mod reconnect;
mod replacing;
mod requests;
mod stale_events;
mod stop;
mod stream_positions;
mod subscriptions;
mod switching;
