//! The demo page and its assets, compiled into the binary.

use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const STYLE_CSS: &str = include_str!("../assets/style.css");
/// The two page clients (Belay and the naive baseline) behind one interface.
const MODES_JS: &str = include_str!("../assets/modes.js");
/// The Belay browser client, `@belay/client/full` (the default entry and
/// what it leaves out: the token providers, the SSE fallback's switch back),
/// built from clients/js (`npm run sync-asset`; the test command fails if
/// this copy differs from a fresh build).
const BELAY_JS: &str = include_str!("../assets/belay.js");
/// Its opt-in SSE + HTTP fallback (`@belay/client/fallback`), built the same way.
const FALLBACK_JS: &str = include_str!("../assets/fallback.js");

/// `/` and the page's scripts and style.
pub(crate) fn routes() -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { page("text/html; charset=utf-8", INDEX_HTML) }),
        )
        .route(
            "/assets/app.js",
            get(|| async { page("text/javascript", APP_JS) }),
        )
        .route(
            "/assets/style.css",
            get(|| async { page("text/css", STYLE_CSS) }),
        )
        .route(
            "/assets/modes.js",
            get(|| async { page("text/javascript", MODES_JS) }),
        )
        .route(
            "/belay.js",
            get(|| async { page("text/javascript", BELAY_JS) }),
        )
        .route(
            "/fallback.js",
            get(|| async { page("text/javascript", FALLBACK_JS) }),
        )
}

fn page(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}
