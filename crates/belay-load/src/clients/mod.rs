//! The minimal protocol clients every load runs: one task and one socket per
//! session, frames told apart by their kind without a full decode, so one
//! process can hold tens of thousands of sessions next to the server it
//! measures. They are not the core's `Session`: the few suites whose
//! clients come back after a loss (the abuse victim, the cluster's capacity
//! and recovery runs) resubscribe by hand, from their last position, so the
//! run measures the server rather than a reconnect policy; `herd` is the
//! suite that runs real `Session`s (through belay-client).
//!
//! * [`target`]: where the load goes (loopback only) and where it comes from
//!   (127.0.0.x source addresses).
//! * [`websocket`]: a Belay session over one tokio-websockets stream (JSON).
//! * [`wire`]: the same session in either codec (JSON or compact binary).
//! * [`sse`]: a Belay session over the SSE fallback (stream + sends).
//! * [`socketio`]: a socket.io v4 / engine.io v4 client (WebSocket only), the
//!   loads' way into a socket.io peer.

pub mod socketio;
pub mod sse;
pub mod target;
pub mod websocket;
pub mod wire;
