//! Socket-level test helpers (feature `sockets`), shared by every crate's
//! tests against a real server on a loopback port: a raw protocol client
//! ([`Raw`]), one over the SSE fallback ([`SseRaw`]) and plain HTTP ([`http_call`], [`upgrade_head`], [`exchange`],
//! `/metrics` readers).

use std::time::Duration;

mod http;
mod raw;
mod sse;

pub use http::{
    exchange, fault, http_call, http_call_with, metric, metric_until, tcp_from, upgrade_head,
    upgrade_request, HttpResponse,
};
pub use raw::{Closed, Next, Raw};
pub use sse::{send_to, SseEvent, SseRaw};

/// A generous bound for anything that should happen "at once".
pub const SOON: Duration = Duration::from_secs(5);
