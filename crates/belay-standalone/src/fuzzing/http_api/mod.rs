//! `http_api`: one HTTP request (or the same one twice: an idempotency
//! key's retry or conflict) through the HTTP server API's router merged
//! with the server's own ([`crate::api::router`] + `Server::router`), in
//! process, on a fresh server (so no input depends on another).
//!
//! Input ([`input::HttpInput`]): byte 0 the method (GET, POST, PUT, DELETE,
//! PATCH, HEAD, OPTIONS, an unknown one), byte 1 the path (each route, near
//! misses, `/healthz`, `/readyz`, `/metrics`, or `/api/` + input bytes),
//! byte 2 the query (fixed ones for `/api/channels`, or input bytes), byte
//! 3 the API key headers (right or wrong, empty, absent, both headers,
//! a lowercase scheme, the key with more after it), byte 4 the content
//! type, byte 5 the body's kind (raw bytes, JSON built from them
//! ([`body::json_body`]), empty), the router's body limit (4,096, 0, 64 or
//! 65,536 bytes) and whether the request goes twice; the rest is the body.
//!
//! Checks, panicking with `http_api: invariant N (…)`: **1** every request
//! is answered within [`ANSWER_WITHIN`], its body within
//! [`MAX_ANSWER_BYTES`]; **2** the status is one spec/http-api.yaml
//! documents for the route (another method: 405; another path under
//! `/api/`: 404; the server's routes: 200, 404 or 405); **3** every error
//! answer under `/api/` (but to HEAD) has the JSON body `{"error": {"code",
//! "message"}}` with a code documented for its status, a 2xx one a JSON
//! body; **4** a request under `/api/` without the right key is answered
//! 401 (whatever the method or path) and publishes nothing;
//! **5** the publications counter moves only when a publishing route
//! answered 200. A panic in the server is a crash too.

mod body;
mod documented;
mod input;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Response};
use belay_server::Server;
use serde_json::Value;
use tower_service::Service;

use input::{HttpInput, KEY};

/// An answer that takes longer is a hang (the fresh server has nothing to
/// wait for: no broker round trips, no backend).
pub const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// An answer body longer than this is a leak (a fresh server holds at most
/// two small publications; stats, metrics and errors are a few KiB).
pub const MAX_ANSWER_BYTES: usize = 64 << 10;

thread_local! {
    /// One current-thread runtime per thread, reused by every input (a new
    /// runtime per input would dominate the time of one).
    static RUNTIME: tokio::runtime::Runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
}

/// Run one input; returns the statuses answered (none when the bytes make
/// no routable request). Panics when an invariant breaks.
pub fn http_api(data: &[u8]) -> Vec<u16> {
    let Some(input) = HttpInput::decode(data) else {
        return Vec::new();
    };
    RUNTIME.with(|runtime| runtime.block_on(run(&input)))
}

async fn run(input: &HttpInput) -> Vec<u16> {
    let server = Server::builder().build();
    let router = server
        .router()
        .merge(crate::api::router(&server, KEY, input.max_body, None));
    let before = server.metrics().publications();
    let mut statuses = Vec::new();
    let mut published_ok = false;
    for body in &input.bodies {
        let mut service = router.clone();
        let answer = tokio::time::timeout(ANSWER_WITHIN, async {
            let response: Response<Body> = match service.call(input.request(body)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            let (parts, body) = response.into_parts();
            (
                parts.status,
                axum::body::to_bytes(body, MAX_ANSWER_BYTES).await,
            )
        })
        .await;
        let Ok((status, bytes)) = answer else {
            panic!(
                "http_api: invariant 1 (answered within {ANSWER_WITHIN:?}): {} {}",
                input.method, input.uri
            );
        };
        let Ok(bytes) = bytes else {
            panic!(
                "http_api: invariant 1 (an answer within {MAX_ANSWER_BYTES} bytes): {} {} answered {status}",
                input.method, input.uri
            );
        };
        let status = status.as_u16();
        check_answer(input, status, &bytes);
        published_ok |=
            status == 200 && documented::route(&input.path).is_some_and(|r| r.publishes);
        statuses.push(status);
    }
    let published = server.metrics().publications().saturating_sub(before);
    assert!(
        published == 0 || (published_ok && input.key_accepted),
        "http_api: invariant 5 (publications only after a 200 from a publishing route with the key): {published} by {} {} answered {statuses:?}",
        input.method,
        input.uri
    );
    statuses
}

/// Invariants 2, 3 and 4 for one answer.
fn check_answer(input: &HttpInput, status: u16, body: &[u8]) {
    let what = || {
        format!(
            "{} {} answered {status}: {:?}",
            input.method,
            input.uri,
            String::from_utf8_lossy(body)
        )
    };
    if !input.path.starts_with("/api/") {
        // The server's own routes (and paths near /api/ that are not
        // under it): answered at once, or not found.
        assert!(
            [200, 404, 405].contains(&status),
            "http_api: invariant 2 (the server's routes: 200, 404 or 405): {}",
            what()
        );
        return;
    }
    let route = documented::route(&input.path);
    // axum answers HEAD with the GET route.
    let head_of_get =
        input.method == Method::HEAD && route.is_some_and(|r| r.method == Method::GET);
    let allowed: &[u16] = match route {
        Some(route) if input.method == route.method || head_of_get => route.statuses,
        Some(_) => &[405],
        None => &[404],
    };
    // The key is checked first on every path under /api/ (unknown paths
    // and methods too).
    if input.key_accepted {
        assert!(
            allowed.contains(&status),
            "http_api: invariant 2 (a documented status: {allowed:?}): {}",
            what()
        );
    } else {
        assert!(
            status == 401,
            "http_api: invariant 4 (no right key: 401): {}",
            what()
        );
    }
    // An answer to HEAD has no body (axum drops it), whatever the status.
    if input.method == Method::HEAD {
        return;
    }
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if (200..300).contains(&status) {
        assert!(
            json.is_some(),
            "http_api: invariant 3 (a JSON answer): {}",
            what()
        );
        return;
    }
    let error = json.as_ref().and_then(|v| v.get("error"));
    let code = error.and_then(|e| e.get("code")).and_then(Value::as_str);
    let message = error.and_then(|e| e.get("message")).and_then(Value::as_str);
    assert!(
        code.is_some_and(|c| documented::codes(status).contains(&c)) && message.is_some(),
        "http_api: invariant 3 (an error is {{\"error\": {{code, message}}}} with a code documented for {status}: {:?}): {}",
        documented::codes(status),
        what()
    );
}
