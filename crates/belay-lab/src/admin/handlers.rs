//! The admin API's handlers, one per route and method.

use std::net::SocketAddr;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::json;

use super::view::{parse, ApiError, ProxyView};
use super::DEFAULT_PROXY;
use crate::fault::Fault;
use crate::registry::Registry;
use crate::timeline::Timeline;
use crate::toxic::Toxic;

type Answer = Result<Response, ApiError>;

/// The body of `POST /proxies`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NewProxy {
    name: String,
    #[serde(default = "any_loopback_port")]
    listen: SocketAddr,
    upstream: SocketAddr,
    #[serde(default)]
    seed: Option<u64>,
}

fn any_loopback_port() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

pub(super) async fn list_proxies(State(registry): State<Registry>) -> Json<Vec<ProxyView>> {
    let views = registry.list();
    Json(views.iter().map(|(n, p)| ProxyView::of(n, p)).collect())
}

pub(super) async fn create_proxy(State(registry): State<Registry>, body: String) -> Answer {
    let new: NewProxy = parse("proxy", &body)?;
    let proxy = registry
        .create(&new.name, new.listen, new.upstream, new.seed)
        .await?;
    let view = ProxyView::of(&new.name, &proxy);
    Ok((StatusCode::CREATED, Json(view)).into_response())
}

pub(super) async fn get_proxy(
    State(registry): State<Registry>,
    Path(name): Path<String>,
) -> Answer {
    let proxy = registry.get(&name)?;
    Ok(Json(ProxyView::of(&name, &proxy)).into_response())
}

pub(super) async fn delete_proxy(
    State(registry): State<Registry>,
    Path(name): Path<String>,
) -> Answer {
    registry.remove(&name)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn list_toxics(
    State(registry): State<Registry>,
    Path(name): Path<String>,
) -> Answer {
    Ok(Json(registry.get(&name)?.toxics()).into_response())
}

pub(super) async fn add_toxic(
    State(registry): State<Registry>,
    Path(name): Path<String>,
    body: String,
) -> Answer {
    let proxy = registry.get(&name)?;
    let toxic: Toxic = parse("toxic", &body)?;
    proxy.add_toxic(toxic.clone())?;
    Ok((StatusCode::CREATED, Json(toxic)).into_response())
}

pub(super) async fn clear_toxics(
    State(registry): State<Registry>,
    Path(name): Path<String>,
) -> Answer {
    registry.get(&name)?.clear_toxics();
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn get_toxic(
    State(registry): State<Registry>,
    Path((name, toxic)): Path<(String, String)>,
) -> Answer {
    let found = registry
        .get(&name)?
        .toxics()
        .into_iter()
        .find(|t| t.name() == toxic)
        .ok_or(crate::ProxyError::NoSuchToxic(toxic))?;
    Ok(Json(found).into_response())
}

pub(super) async fn remove_toxic(
    State(registry): State<Registry>,
    Path((name, toxic)): Path<(String, String)>,
) -> Answer {
    registry.get(&name)?.remove_toxic(&toxic)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn run_timeline(
    State(registry): State<Registry>,
    Path(name): Path<String>,
    body: String,
) -> Answer {
    let proxy = registry.get(&name)?;
    let timeline = Timeline::from_json(&body).map_err(ApiError::bad_request)?;
    let steps = timeline.steps().len();
    proxy.run_timeline(timeline)?;
    Ok((StatusCode::ACCEPTED, Json(json!({ "steps": steps }))).into_response())
}

pub(super) async fn stop_timeline(
    State(registry): State<Registry>,
    Path(name): Path<String>,
) -> Answer {
    registry.get(&name)?.stop_timeline();
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(super) async fn get_fault(
    State(registry): State<Registry>,
    Path(name): Path<String>,
) -> Answer {
    Ok(Json(registry.get(&name)?.fault()).into_response())
}

pub(super) async fn post_fault(
    State(registry): State<Registry>,
    Path(name): Path<String>,
    body: String,
) -> Answer {
    let proxy = registry.get(&name)?;
    let fault: Fault = parse("fault", &body)?;
    proxy.set(fault)?;
    Ok(Json(proxy.fault()).into_response())
}

pub(super) async fn get_counters(
    State(registry): State<Registry>,
    Path(name): Path<String>,
) -> Answer {
    Ok(Json(registry.get(&name)?.counters()).into_response())
}

pub(super) async fn get_default_fault(state: State<Registry>) -> Answer {
    get_fault(state, Path(DEFAULT_PROXY.to_owned())).await
}

pub(super) async fn post_default_fault(state: State<Registry>, body: String) -> Answer {
    post_fault(state, Path(DEFAULT_PROXY.to_owned()), body).await
}

pub(super) async fn get_default_counters(state: State<Registry>) -> Answer {
    get_counters(state, Path(DEFAULT_PROXY.to_owned())).await
}
