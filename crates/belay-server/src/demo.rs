//! The demo application behind `belay serve --demo`: a `feed` channel with a
//! tick every 500 ms, a few RPC methods, and a fault panel (admin API plus a
//! web page at `/`) with the faults of spec/MISSION §10.
//!
//! Admin API (JSON):
//! * `GET /admin/state` → connections, faults, uptime, whether accepting;
//! * `POST /admin/fault/{name}` with `{"on": bool}` (`delay_ms` for
//!   `slow_replies`, `after_ms` for `flapping`, `down_ms` for `restart`),
//!   name ∈ `freeze`, `service_down`, `slow_replies`, `flapping`, `restart`,
//!   `drain` → the new state; an unknown name → 404;
//! * `GET /admin/events` → Server-Sent Events, one JSON `ServerEvent` each.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::Stream;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::rpc::{Methods, RpcError};
use crate::server::Lifecycle;
use crate::Server;

/// The demo page and its assets, compiled into the binary.
const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const STYLE_CSS: &str = include_str!("../assets/style.css");
/// The two page clients (Belay and the naive baseline) behind one interface.
const MODES_JS: &str = include_str!("../assets/modes.js");
/// The Belay browser client, built from clients/js (`npm run sync-asset`;
/// the test command fails if this copy differs from a fresh build).
const BELAY_JS: &str = include_str!("../assets/belay.js");

/// How long `slow_replies` delays each answer unless the request says
/// otherwise (`delay_ms`).
pub const SLOW_REPLY: Duration = Duration::from_secs(15);

/// How long `flapping` lets a session live unless the request says otherwise.
pub const FLAP_AFTER: Duration = Duration::from_millis(300);

/// How long `restart` refuses upgrades unless the request says otherwise.
pub const RESTART_DOWN: Duration = Duration::from_secs(5);

/// The demo's RPC methods: `echo`, idempotent `order.create`, and `slow`.
pub fn methods() -> Methods {
    let orders = Arc::new(AtomicU64::new(0));
    let mut methods = Methods::new();
    methods.register("echo", |_ctx, value: Value| async move {
        Ok::<_, RpcError>(value)
    });
    methods.register("order.create", move |ctx, item: Value| {
        let orders = Arc::clone(&orders);
        async move {
            // Without an idempotency key a retry would create a second order.
            let id = orders.fetch_add(1, Ordering::Relaxed) + 1;
            Ok::<_, RpcError>(json!({
                "order": id,
                "item": item,
                "idempotency_key": ctx.idempotency_key,
            }))
        }
    });
    methods.register("slow", |_ctx, ms: u64| async move {
        tokio::time::sleep(Duration::from_millis(ms.min(30_000))).await;
        Ok::<_, RpcError>(json!({ "slept_ms": ms.min(30_000) }))
    });
    methods
}

/// Publish a tick on `feed` every `every` until the server is drained.
pub fn spawn_feed(server: &Server, every: Duration) -> tokio::task::JoinHandle<()> {
    let server = server.clone();
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(every);
        let mut n: u64 = 0;
        while server.lifecycle() != Lifecycle::Drained {
            ticker.tick().await;
            n += 1;
            // A tick is small and flat: publishing it is never refused.
            if let Err(error) = server.publish("feed", json!({ "tick": n })) {
                tracing::warn!(%error, "demo feed tick refused");
            }
        }
    })
}

/// The server's routes plus the demo page, and the admin API (the server's
/// and the fault panel's) behind the admin guard ([`crate::admin`]): on
/// loopback without a token, as `belay serve --demo` listens by default.
pub fn router(server: &Server) -> Router {
    let demo = Router::new()
        .route("/", get(|| async { html(INDEX_HTML) }))
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript", APP_JS) }),
        )
        .route(
            "/assets/style.css",
            get(|| async { asset("text/css", STYLE_CSS) }),
        )
        .route(
            "/assets/modes.js",
            get(|| async { asset("text/javascript", MODES_JS) }),
        )
        .route(
            "/belay.js",
            get(|| async { asset("text/javascript", BELAY_JS) }),
        )
        .with_state(server.clone());
    let admin = Router::new()
        .route("/admin/state", get(state))
        .route("/admin/fault/{name}", post(fault))
        .route("/admin/events", get(events))
        .with_state(server.clone());
    server
        .router()
        .merge(server.admin_router())
        .merge(crate::admin::guard(server, admin))
        .merge(demo)
}

fn html(body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

fn state_json(server: &Server) -> Value {
    let faults = server.faults();
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
        "uptime_ms": server.shared.clock.now().as_millis(),
        "accepting": server.lifecycle() == Lifecycle::Serving && !faults.refusing(now),
    })
}

async fn state(State(server): State<Server>) -> Json<Value> {
    Json(state_json(&server))
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
    State(server): State<Server>,
    Path(name): Path<String>,
    body: Option<Json<FaultRequest>>,
) -> Response {
    let request = body.map(|Json(b)| b).unwrap_or(FaultRequest {
        on: true,
        delay_ms: None,
        after_ms: None,
        down_ms: None,
    });
    let on = request.on;
    let switch = if on { "on" } else { "off" };
    match name.as_str() {
        "freeze" => {
            server.set_faults(format!("freeze {switch}"), |f| f.freeze = on);
        }
        "service_down" => {
            server.set_faults(format!("service_down {switch}"), |f| f.service_down = on);
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
            server.set_faults(detail, |f| f.slow_replies = on.then_some(delay));
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
            server.set_faults(detail, |f| f.flapping = on.then_some(after));
        }
        "restart" => {
            let down = request
                .down_ms
                .map_or(RESTART_DOWN, |ms| Duration::from_millis(ms.min(600_000)));
            server.restart(down);
        }
        "drain" => server.drain(),
        _ => return (StatusCode::NOT_FOUND, "unknown fault").into_response(),
    }
    Json(state_json(&server)).into_response()
}

async fn events(
    State(server): State<Server>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = server.events();
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
