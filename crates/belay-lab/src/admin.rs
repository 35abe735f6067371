//! The HTTP admin API: named proxies, their toxics, timelines, faults and
//! counters (documented with examples in `docs/PROXY.md`).
//!
//! | request | answer |
//! | --- | --- |
//! | `GET /proxies` | `200`, every proxy (name, addresses, seed, fault, toxics, counters) |
//! | `POST /proxies` `{"name","listen"?,"upstream","seed"?}` | `201`, the proxy; `400` bad or non-loopback address, `409` name taken |
//! | `GET /proxies/{name}` | `200`, the proxy; `404` |
//! | `DELETE /proxies/{name}` | `204`: closed (port released, connections closed) |
//! | `GET /proxies/{name}/toxics` | `200`, its [`Toxic`](crate::Toxic)s in order of addition |
//! | `POST /proxies/{name}/toxics` with a toxic | `201`, the toxic as stored; `400` bad toxic, `409` name taken |
//! | `DELETE /proxies/{name}/toxics` | `204`: every toxic removed |
//! | `GET /proxies/{name}/toxics/{toxic}` | `200`, the toxic; `404` |
//! | `DELETE /proxies/{name}/toxics/{toxic}` | `204`; `404` |
//! | `POST /proxies/{name}/timeline` with a [`Timeline`](crate::Timeline) | `202`, `{"steps":n}`: running (replaces the previous one) |
//! | `DELETE /proxies/{name}/timeline` | `204`: stopped (its toxics stay) |
//! | `GET`, `POST /proxies/{name}/fault` | the [`Fault`](crate::Fault) in force; set one (replaces the toxics) |
//! | `GET /proxies/{name}/counters` | `200`, its [`CountersSnapshot`](crate::CountersSnapshot) |
//! | `GET`, `POST /faults`, `GET /counters` | the same for the proxy named `default` |
//!
//! Errors are `{"error": "…"}` with a message saying what is wrong.
//!
//! ```text
//! curl -X POST localhost:9001/proxies/default/toxics \
//!      -d '{"type":"latency","stream":"downstream","attributes":{"latency_ms":200}}'
//! ```

mod handlers;
mod view;

use std::net::SocketAddr;

use axum::routing::get;
use axum::Router;

use crate::proxy::{bind, Proxy, ProxyError};
use crate::registry::Registry;

/// The name [`serve`] and [`router`] give their one proxy, and the proxy
/// `/faults` and `/counters` act on.
pub const DEFAULT_PROXY: &str = "default";

/// The admin routes for `proxy` alone (registered as [`DEFAULT_PROXY`];
/// more proxies can be created through `POST /proxies`).
pub fn router(proxy: Proxy) -> Router {
    registry_router(single(proxy))
}

/// The admin routes for every proxy of `registry`.
pub fn registry_router(registry: Registry) -> Router {
    use handlers::*;
    Router::new()
        .route("/proxies", get(list_proxies).post(create_proxy))
        .route("/proxies/{name}", get(get_proxy).delete(delete_proxy))
        .route(
            "/proxies/{name}/toxics",
            get(list_toxics).post(add_toxic).delete(clear_toxics),
        )
        .route(
            "/proxies/{name}/toxics/{toxic}",
            get(get_toxic).delete(remove_toxic),
        )
        .route(
            "/proxies/{name}/timeline",
            axum::routing::post(run_timeline).delete(stop_timeline),
        )
        .route("/proxies/{name}/fault", get(get_fault).post(post_fault))
        .route("/proxies/{name}/counters", get(get_counters))
        .route("/faults", get(get_default_fault).post(post_default_fault))
        .route("/counters", get(get_default_counters))
        .with_state(registry)
}

fn single(proxy: Proxy) -> Registry {
    let registry = Registry::new(proxy.seed());
    // A fresh registry is empty: the insert cannot collide.
    let _ = registry.insert(DEFAULT_PROXY, proxy);
    registry
}

/// Serve the admin routes for `proxy` alone on the loopback address `addr`
/// (port 0: any free port). Returns the bound address and the future that
/// serves it.
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
    serve_registry(single(proxy), addr).await
}

/// Serve the admin routes for `registry` on the loopback address `addr`
/// (port 0: any free port). Returns the bound address and the future that
/// serves it.
pub async fn serve_registry(
    registry: Registry,
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
    let serving = async move { axum::serve(listener, registry_router(registry)).await };
    Ok((local, serving))
}
