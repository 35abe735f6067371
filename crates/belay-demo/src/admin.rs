//! The demo's routes: the server's own, the page, and the fault panel's
//! admin API behind the server's admin guard (on loopback without a token,
//! as `belay serve --demo` listens by default).
//!
//! Admin API (JSON):
//! * `GET /admin/state` → connections, faults, uptime, whether accepting;
//! * `POST /admin/fault/{name}` with `{"on": bool}` (`delay_ms` for
//!   `slow_replies`, `after_ms` for `flapping`, `down_ms` for `restart`),
//!   name ∈ `freeze`, `service_down`, `slow_replies`, `flapping`, `restart`,
//!   `drain` → the new state; an unknown name → 404;
//! * `GET /admin/events` → Server-Sent Events, one JSON `ServerEvent` each.
//!
//! While a restart window lasts, `/ws` upgrades are answered 503 with
//! `Retry-After: 1` ("restarting"), before the server sees them.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use belay_server::{Lifecycle, Server};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::faults::FaultBench;

/// How long `slow_replies` delays each answer unless the request says
/// otherwise (`delay_ms`).
pub const SLOW_REPLY: Duration = Duration::from_secs(15);

/// How long `flapping` lets a session live unless the request says otherwise.
pub const FLAP_AFTER: Duration = Duration::from_millis(300);

/// How long `restart` refuses upgrades unless the request says otherwise.
pub const RESTART_DOWN: Duration = Duration::from_secs(5);

#[derive(Clone)]
struct Panel {
    server: Server,
    bench: FaultBench,
}

/// The server's routes (including `POST /admin/drain`), the page at `/`,
/// and the fault panel's admin API.
pub(crate) fn router(server: &Server, bench: &FaultBench) -> Router {
    let panel = Panel {
        server: server.clone(),
        bench: bench.clone(),
    };
    let admin = Router::new()
        .route("/admin/state", get(state))
        .route("/admin/fault/{name}", post(fault))
        .route("/admin/events", get(events))
        .with_state(panel);
    server
        .router()
        .merge(server.admin_router())
        .merge(belay_server::admin::guard(server, admin))
        .merge(crate::page::routes())
        .layer(middleware::from_fn_with_state(
            bench.clone(),
            refuse_while_restarting,
        ))
}

/// A restart window refuses upgrades and new fallback streams as a server
/// that is not up yet would (sends to a stream cut by the restart find
/// nothing: 404).
async fn refuse_while_restarting(
    State(bench): State<FaultBench>,
    request: Request,
    next: Next,
) -> Response {
    if matches!(request.uri().path(), "/ws" | "/sse") && bench.refusing() {
        let mut response = (StatusCode::SERVICE_UNAVAILABLE, "restarting").into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return response;
    }
    next.run(request).await
}

fn state_json(panel: &Panel) -> Value {
    let Panel { server, bench } = panel;
    let faults = bench.faults();
    let now = std::time::Instant::now();
    json!({
        "connections": server.metrics().open_connections(),
        "faults": {
            "freeze": faults.freeze,
            "service_down": faults.service_down,
            "slow_replies": faults.slow_replies.is_some(),
            "slow_replies_ms": faults.slow_replies.map(|d| d.as_millis() as u64),
            "flapping": faults.flapping.is_some(),
            "flapping_ms": faults.flapping.map(|d| d.as_millis() as u64),
            "restarting": faults.refusing(now),
            "draining": server.lifecycle() != Lifecycle::Serving,
        },
        "uptime_ms": server.uptime().as_millis() as u64,
        "accepting": server.lifecycle() == Lifecycle::Serving && !faults.refusing(now),
    })
}

async fn state(State(panel): State<Panel>) -> Json<Value> {
    Json(state_json(&panel))
}

/// Body of `POST /admin/fault/{name}`.
#[derive(Debug, Deserialize)]
struct FaultRequest {
    #[serde(default)]
    on: bool,
    delay_ms: Option<u64>,
    after_ms: Option<u64>,
    down_ms: Option<u64>,
}

async fn fault(
    State(panel): State<Panel>,
    Path(name): Path<String>,
    body: Option<Json<FaultRequest>>,
) -> Response {
    let request = body.map(|Json(b)| b).unwrap_or(FaultRequest {
        on: true,
        delay_ms: None,
        after_ms: None,
        down_ms: None,
    });
    let Panel { server, bench } = &panel;
    let on = request.on;
    let switch = if on { "on" } else { "off" };
    match name.as_str() {
        "freeze" => {
            bench.set(server, format!("freeze {switch}"), |f| f.freeze = on);
        }
        "service_down" => {
            bench.set(server, format!("service_down {switch}"), |f| {
                f.service_down = on;
            });
        }
        "slow_replies" => {
            let delay = request
                .delay_ms
                .map_or(SLOW_REPLY, |ms| Duration::from_millis(ms.min(60_000)));
            let detail = if on {
                format!("slow_replies on ({} ms)", delay.as_millis())
            } else {
                "slow_replies off".into()
            };
            bench.set(server, detail, |f| f.slow_replies = on.then_some(delay));
        }
        "flapping" => {
            let after = request
                .after_ms
                .map_or(FLAP_AFTER, |ms| Duration::from_millis(ms.clamp(1, 60_000)));
            let detail = if on {
                format!("flapping on (drop after {} ms)", after.as_millis())
            } else {
                "flapping off".into()
            };
            bench.set(server, detail, |f| f.flapping = on.then_some(after));
        }
        "restart" => {
            let down = request
                .down_ms
                .map_or(RESTART_DOWN, |ms| Duration::from_millis(ms.min(600_000)));
            bench.restart(server, down);
        }
        "drain" => server.drain(),
        _ => return (StatusCode::NOT_FOUND, "unknown fault").into_response(),
    }
    Json(state_json(&panel)).into_response()
}

async fn events(State(panel): State<Panel>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = panel.server.events();
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(event) => {
                    let data = serde_json::to_string(&event).unwrap_or_default();
                    return Some((Ok(Event::default().data(data)), rx));
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
