//! What the HTTP server API documents (spec/http-api.yaml, and the table
//! in `api/mod.rs`): each route's method and statuses, and the error codes
//! each status may carry.

use axum::http::Method;

/// One documented route.
pub(crate) struct Route {
    pub(crate) path: &'static str,
    pub(crate) method: Method,
    /// Every status spec/http-api.yaml lists for it.
    pub(crate) statuses: &'static [u16],
    /// Whether a 200 may have published (the publications counter moves).
    pub(crate) publishes: bool,
}

/// The API's routes, in the order of spec/http-api.yaml.
pub(crate) const ROUTES: [Route; 9] = [
    Route {
        path: "/api/publish",
        method: Method::POST,
        statuses: &[200, 400, 401, 403, 408, 409, 413, 429, 503],
        publishes: true,
    },
    Route {
        path: "/api/user_publish",
        method: Method::POST,
        statuses: &[200, 400, 401, 408, 409, 413, 429, 503],
        publishes: true,
    },
    Route {
        path: "/api/broadcast",
        method: Method::POST,
        statuses: &[200, 400, 401, 403, 408, 413],
        publishes: true,
    },
    Route {
        path: "/api/disconnect",
        method: Method::POST,
        statuses: &[200, 400, 401, 408, 413, 503],
        publishes: false,
    },
    Route {
        path: "/api/presence",
        method: Method::POST,
        statuses: &[200, 400, 401, 404, 408, 413, 503],
        publishes: false,
    },
    Route {
        path: "/api/history",
        method: Method::POST,
        statuses: &[200, 400, 401, 408, 409, 413, 501, 503],
        publishes: false,
    },
    Route {
        path: "/api/channels",
        method: Method::GET,
        statuses: &[200, 400, 401, 501, 503],
        publishes: false,
    },
    Route {
        path: "/api/stats",
        method: Method::GET,
        statuses: &[200, 401],
        publishes: false,
    },
    Route {
        path: "/api/info",
        method: Method::GET,
        statuses: &[200, 401],
        publishes: false,
    },
];

/// The error codes an error answer with `status` may carry (the table of
/// `api/mod.rs`).
pub(crate) fn codes(status: u16) -> &'static [&'static str] {
    match status {
        400 => &["bad_request"],
        401 => &["unauthorized"],
        403 => &["reserved_channel"],
        404 => &["not_found"],
        405 => &["method_not_allowed"],
        408 => &["timeout"],
        409 => &[
            "idempotency_conflict",
            "in_flight",
            "epoch_changed",
            "beyond_top",
        ],
        413 => &["too_large"],
        429 => &["rate_limited"],
        501 => &["unsupported"],
        503 => &["unavailable"],
        _ => &[],
    }
}

/// The documented route at `path` (the path without its query), if any.
pub(crate) fn route(path: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.path == path)
}
