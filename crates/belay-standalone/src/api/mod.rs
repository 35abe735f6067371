//! The HTTP server API for the application's backend: publish (with an
//! idempotency key), broadcast to many channels, disconnect a user (on
//! every node of a cluster), and read what the server holds: a channel's
//! history, its presence, the channels with subscribers, the node's info
//! and stats (every node's, in a cluster); behind an API key. Described,
//! strictly, in spec/http-api.yaml.
//!
//! Every answer is JSON. Errors are `{"error": {"code", "message"}}`:
//!
//! | status | code | when |
//! |---|---|---|
//! | 401 | `unauthorized` | no API key, or another one (`Authorization: Bearer KEY` or `X-API-Key: KEY`) |
//! | 400 | `bad_request` | not JSON, an unknown or missing field or query parameter (named in the message), a field of the wrong type or out of range (named), a bad channel name or pattern, data nested too deep |
//! | 403 | `reserved_channel` | `/api/publish` or `/api/broadcast` naming one of the server's own channels (`$…`: `$host-calls:`, `$host-state:`, `$host:`, `$presence:`); nothing is published |
//! | 404 | `not_found` | `/api/presence` for a channel whose namespace does not track presence; a path under `/api/` that is no route |
//! | 405 | `method_not_allowed` | a method the route does not take |
//! | 408 | `timeout` | a body not in full within the server's `body_timeout` (`limits.body_timeout_ms`); the connection closes |
//! | 413 | `too_large` | a body over the limit, or a publication over `max_publication_len` |
//! | 409 | `idempotency_conflict` | an idempotency key reused with another body |
//! | 409 | `in_flight` | the same key is being published now: retry |
//! | 409 | `epoch_changed` | `/api/history` `since` names another epoch: its history is gone (the answer's `position` is the channel's now) |
//! | 409 | `beyond_top` | `/api/history` `since` is beyond the channel's top offset (`position` likewise) |
//! | 429 | `rate_limited` | too many keys held |
//! | 501 | `unsupported` | `/api/history` or `/api/channels` on a broker that cannot read history or list channels |
//! | 503 | `unavailable` | the broker cannot take publications or answer now (retry) |
//!
//! Bounds of one answer: `/api/history` at most [`MAX_HISTORY`]
//! publications and [`MAX_HISTORY_BYTES`] of data; `/api/channels` at most
//! [`MAX_CHANNELS`] channels and [`MAX_CHANNEL_BYTES`] of names (both say
//! `truncated` when a bound cut the page).

mod channels;
mod cluster;
mod handlers;
mod history;
mod presence;
mod stats;
mod user_publish;

pub use cluster::ClusterApi;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::{Json, Router};
use belay_proto::server::IdempotencyCache;
use belay_server::Server;
use serde_json::json;

/// How long a publish's outcome is kept for a retry with its key.
const KEY_RETENTION: Duration = Duration::from_secs(300);
/// Keys held at most.
const MAX_KEYS: usize = 100_000;
/// Bytes the keys and outcomes hold at most.
const MAX_KEY_BYTES: usize = 16 << 20;
/// Channels one broadcast may name.
pub const MAX_BROADCAST: usize = 1_000;
/// Publications one `/api/history` answer gives at most (and its default
/// `limit`).
pub const MAX_HISTORY: usize = 1_000;
/// Bytes of data one `/api/history` answer gives at most (beyond its
/// first publication, which always goes in).
pub const MAX_HISTORY_BYTES: usize = 1 << 20;
/// Channels one `/api/channels` answer lists at most.
pub const MAX_CHANNELS: usize = 1_000;
/// Bytes of channel names one `/api/channels` answer lists at most (each
/// node's answer in a cluster too, within a control message).
pub const MAX_CHANNEL_BYTES: usize = 24 << 10;

/// What the API's handlers share.
#[derive(Clone)]
pub(crate) struct Api {
    pub(crate) server: Server,
    pub(crate) key: Arc<str>,
    pub(crate) max_body: usize,
    pub(crate) keys: Arc<Mutex<IdempotencyCache>>,
    pub(crate) started: std::time::Instant,
    /// Every node, when the server is one of a cluster.
    pub(crate) cluster: Option<ClusterApi>,
}

/// The API's routes under `/api/`, for `server`, accepting `key`; bodies
/// over `max_body` bytes are refused 413. With `cluster`, what concerns a
/// user (disconnecting them), the channel list and the stats reach every
/// node.
pub fn router(server: &Server, key: &str, max_body: usize, cluster: Option<ClusterApi>) -> Router {
    let mut cache = IdempotencyCache::new(KEY_RETENTION, MAX_KEYS);
    cache.set_max_bytes(MAX_KEY_BYTES);
    let api = Api {
        server: server.clone(),
        key: Arc::from(key),
        max_body,
        keys: Arc::new(Mutex::new(cache)),
        started: std::time::Instant::now(),
        cluster,
    };
    Router::new()
        .route("/api/publish", post(handlers::publish))
        .route("/api/user_publish", post(user_publish::user_publish))
        .route("/api/broadcast", post(handlers::broadcast))
        .route("/api/info", get(handlers::info))
        .route("/api/disconnect", post(handlers::disconnect))
        .route("/api/presence", post(presence::presence))
        .route("/api/history", post(history::history))
        .route("/api/channels", get(channels::channels))
        .route("/api/stats", get(stats::stats))
        // So that every answer under /api/ is JSON (axum's own 404 and 405
        // have empty bodies); an unknown path behind the key check like the
        // routes. (`{*rest}` does not match an empty rest: `/api/` apart.)
        .route("/api/", any(no_route))
        .route("/api/{*rest}", any(no_route))
        .method_not_allowed_fallback(method_not_allowed)
        // `route_layer`, not `layer`: a layer also wraps the router's
        // fallback, which merging makes every other router's, so a path
        // outside /api/ that no route serves (`/favicon.ico`) was answered
        // 401 "an API key is required" instead of 404 (found by the
        // http_api fuzz target). A route's 405 is still behind the key.
        .route_layer(middleware::from_fn_with_state(api.clone(), check_key))
        .with_state(api)
}

/// An error answer.
pub(crate) fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let message: String = message.into();
    (
        status,
        Json(json!({"error": {"code": code, "message": message}})),
    )
        .into_response()
}

async fn no_route() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such route (spec/http-api.yaml lists them)",
    )
}

async fn method_not_allowed() -> Response {
    error(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take this method (spec/http-api.yaml)",
    )
}

async fn check_key(
    axum::extract::State(api): axum::extract::State<Api>,
    request: Request,
    next: Next,
) -> Response {
    // An empty configured key opens nothing: `config check` refuses it,
    // and an embedder that passes one anyway gets a closed API.
    let accepted = !api.key.is_empty()
        && presented(request.headers()).is_some_and(|k| same(k.as_bytes(), api.key.as_bytes()));
    if !accepted {
        return error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "an API key is required: Authorization: Bearer KEY, or X-API-Key: KEY",
        );
    }
    next.run(request).await
}

fn presented(headers: &HeaderMap) -> Option<&str> {
    if let Some(key) = headers.get("x-api-key").and_then(|v| v.to_str().ok()) {
        return Some(key);
    }
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// Compare without stopping at the first difference.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
