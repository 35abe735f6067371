//! Proxies to the application's backend over HTTP, so the backend needs no
//! Belay code: [`RpcProxy`] forwards client requests, [`BackendAuth`] asks
//! the backend who a connection is (connect and refresh), whether it may
//! subscribe to a channel, and whether it may publish to one from the
//! client (for namespaces whose `subscribe` or `publish` is `backend`).
//!
//! Every call is a JSON POST on a pooled keep-alive connection, bounded in
//! time and in calls in flight ([`Backend`]). The backend answers
//! `{"result": …}` or `{"error": {"code", "message"}}`. What a failure
//! means is told truthfully:
//!
//! | what happened | a request gets | a connect / refresh | a subscribe / publish |
//! |---|---|---|---|
//! | the backend answered an error | its code | 4001 `unauthorized: MESSAGE` | its message (`forbidden`, or the code it gave: `unauthorized`, `unavailable`) |
//! | refused, unreachable, too many calls in flight | `unavailable` (not executed) | 1013 `unavailable` (retried with backoff) | `unavailable` |
//! | no answer in time | `timeout` (it may have run) | 1013 | `unavailable` |
//! | broke mid-answer, 5xx, not JSON | `internal` (it may have run) | 1013 | `unavailable` |
//! | an answer over `max_response_bytes` (cut as it streams) | `too_large` (it ran) | 1013 | `unavailable` |
//!
//! A `result` the proxy took whose `response` frame would still pass
//! `MAX_FRAME_LEN` is answered `too_large` by the server (it ran), never
//! sent (spec/PROTOCOL.md §4.5).
//!
//! A slow or dead backend never touches the connections' readiness: only
//! what waits for it waits or fails.

mod auth;
mod backend;
mod rpc;
mod tls;

pub use auth::BackendAuth;
pub use backend::{Backend, Failure, DEFAULT_MAX_RESPONSE_BYTES};
pub use rpc::RpcProxy;
pub use tls::BackendTls;

/// Why a proxy could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The URL is not an `http://` or `https://` URL.
    #[error("proxy URL {0:?}: expected http://HOST:PORT/PATH or https://HOST:PORT/PATH")]
    Url(String),
    /// The CA file for `https://` backends is not usable.
    #[error("proxy CA: {0}")]
    Ca(String),
}
