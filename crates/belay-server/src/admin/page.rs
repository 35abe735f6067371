//! The web UI's page and assets, compiled into the binary
//! (crates/belay-server/assets/admin/). `GET /admin/` answers the console
//! to a request the guard admits, and the login form (401) to one that
//! only lacks the token; the console's script and the Belay browser
//! client are behind the guard, the login form's script and the style are
//! not (they hold nothing). Every answer forbids framing, caching and
//! scripts from anywhere but this origin.

use axum::extract::{Request, State};
use axum::http::{header, HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::guard::{admits, Refusal};
use crate::Server;

const CONSOLE_HTML: &str = include_str!("../../assets/admin/index.html");
const CONSOLE_JS: &str = include_str!("../../assets/admin/console.js");
const LOGIN_HTML: &str = include_str!("../../assets/admin/login.html");
const LOGIN_JS: &str = include_str!("../../assets/admin/login.js");
const STYLE_CSS: &str = include_str!("../../assets/admin/style.css");
/// The Belay browser client's default entry, built from clients/js
/// (`npm run sync-asset`; the test command fails if this copy differs from
/// a fresh build).
const BELAY_JS: &str = include_str!("../../assets/admin/belay.js");

/// What every admin page carries: no framing (clickjacking on the
/// actions), no caching, no referrer, scripts and connections to this
/// origin only.
const HEADERS: [(HeaderName, &str); 5] = [
    (
        header::CONTENT_SECURITY_POLICY,
        "default-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (header::X_FRAME_OPTIONS, "DENY"),
    (header::CACHE_CONTROL, "no-store"),
    (header::REFERRER_POLICY, "no-referrer"),
    (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
];

fn asset(status: StatusCode, content_type: &'static str, body: &'static str) -> Response {
    (
        status,
        HEADERS,
        [(header::CONTENT_TYPE, content_type)],
        body,
    )
        .into_response()
}

/// The routes behind the guard.
pub(super) fn guarded() -> Router<Server> {
    Router::new()
        .route(
            "/admin/console.js",
            get(|| async { asset(StatusCode::OK, "text/javascript", CONSOLE_JS) }),
        )
        .route(
            "/admin/belay.js",
            get(|| async { asset(StatusCode::OK, "text/javascript", BELAY_JS) }),
        )
}

/// The routes any peer reaches.
pub(super) fn open() -> Router<Server> {
    Router::new()
        .route("/admin/", get(index))
        .route("/admin", get(index))
        .route(
            "/admin/login.js",
            get(|| async { asset(StatusCode::OK, "text/javascript", LOGIN_JS) }),
        )
        .route(
            "/admin/style.css",
            get(|| async { asset(StatusCode::OK, "text/css", STYLE_CSS) }),
        )
}

async fn index(State(server): State<Server>, request: Request) -> Response {
    const HTML: &str = "text/html; charset=utf-8";
    match admits(&server, &request) {
        Ok(()) => asset(StatusCode::OK, HTML, CONSOLE_HTML),
        Err(Refusal::TokenRequired) => asset(StatusCode::UNAUTHORIZED, HTML, LOGIN_HTML),
        Err(refused) => refused.into_response(),
    }
}
