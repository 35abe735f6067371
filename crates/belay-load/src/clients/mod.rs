//! The minimal protocol clients every load runs: one task and one socket per
//! session, frames told apart by their kind without a full decode, so one
//! process can hold tens of thousands of sessions next to the server it
//! measures. They hold no reconnect or resume logic: a suite whose clients
//! come back after a loss runs the core's `Session`, through belay-client
//! ([`session`]: the abuse victim, the cluster's recovery run, the herd) or,
//! where tens of thousands share a process, on one task each
//! ([`core_session`]: the cluster's capacity hold).
//!
//! * [`target`]: where the load goes (loopback only) and where it comes from
//!   (127.0.0.x source addresses).
//! * [`websocket`]: a Belay session over one tokio-websockets stream (JSON).
//! * [`wire`]: the same session in either codec (JSON or compact binary).
//! * [`sse`]: a Belay session over the SSE fallback (stream + sends).
//! * [`session`]: a belay-client `Client` (the core's `Session`) from a
//!   source address, to the targets in turn.
//! * [`core_session`]: the core's `Session` on one task and one socket.
//! * [`socketio`]: a socket.io v4 / engine.io v4 client (WebSocket only), the
//!   loads' way into a socket.io peer.

pub mod core_session;
pub mod session;
pub mod socketio;
pub mod sse;
pub mod target;
pub mod websocket;
pub mod wire;
