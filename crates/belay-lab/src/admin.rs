//! The HTTP admin endpoint of a [`Proxy`].
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /faults` | `200`, the fault in force, e.g. `{"mode":"pass"}` |
//! | `POST /faults` with a [`Fault`] as JSON | `200`, the fault now in force; `400 {"error":…}` if the body is not a valid fault |
//! | `GET /counters` | `200`, a [`CountersSnapshot`](crate::CountersSnapshot) as JSON |
//!
//! ```text
//! curl -X POST localhost:9001/faults -d '{"mode":"latency","ms":200}'
//! ```

use std::net::SocketAddr;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::fault::Fault;
use crate::proxy::{bind, Proxy, ProxyError};

/// The admin routes for `proxy`.
pub fn router(proxy: Proxy) -> Router {
    Router::new()
        .route("/faults", get(get_fault).post(post_fault))
        .route("/counters", get(get_counters))
        .with_state(proxy)
}

/// Serve the admin routes on the loopback address `addr` (port 0: any free
/// port). Returns the bound address and the future that serves it.
pub async fn serve(
    proxy: Proxy,
    addr: SocketAddr,
) -> Result<
    (
        SocketAddr,
        impl std::future::Future<Output = std::io::Result<()>>,
    ),
    ProxyError,
> {
    let listener = bind("admin", addr).await?;
    let local = listener
        .local_addr()
        .map_err(|source| ProxyError::Bind { addr, source })?;
    let serving = async move { axum::serve(listener, router(proxy)).await };
    Ok((local, serving))
}

async fn get_fault(State(proxy): State<Proxy>) -> Json<Fault> {
    Json(proxy.fault())
}

async fn post_fault(State(proxy): State<Proxy>, body: String) -> Response {
    let fault = match serde_json::from_str::<Fault>(&body) {
        Ok(fault) => fault,
        Err(e) => return bad_request(format!("not a fault: {e}")),
    };
    match proxy.set(fault) {
        Ok(()) => Json(proxy.fault()).into_response(),
        Err(e) => bad_request(e.to_string()),
    }
}

async fn get_counters(State(proxy): State<Proxy>) -> Response {
    Json(proxy.counters()).into_response()
}

fn bad_request(message: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": message }))).into_response()
}
