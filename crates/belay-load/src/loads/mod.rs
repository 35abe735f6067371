//! The loads: each one bounded in count and in time, run from `belay load`,
//! `server-bench` and the suites, returning a report of what it measured.
//!
//! * [`idle`]: open N sessions (WebSocket or SSE), answer pings, hold them.
//! * [`echo`]: C sessions × R sequential `echo` requests; throughput and latency.
//! * [`broadcast`]: S subscribers of one channel, M stamped messages
//!   published at X/s; deliveries/s and delivery latency.
//! * [`http_publish`]: the broadcast load's other publisher, `POST
//!   /api/publish` over keep-alive HTTP connections.
//! * [`channels`]: S sessions × N distinct channels each, subscribed then left,
//!   in rounds; what a channel costs and whether memory comes back.
//! * [`sse_compare`]: the SSE fallback against WebSocket on the same server.
//! * [`socketio`]: the idle, echo and broadcast loads in socket.io.

pub mod broadcast;
pub mod channels;
pub mod echo;
pub mod http_publish;
pub mod idle;
pub mod socketio;
pub mod sse_compare;
