//! The API's handlers: read the body within its limit, parse it strictly
//! (unknown fields are errors), act, answer JSON.

use std::sync::PoisonError;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use belay_proto::message::{Publication, Reply};
use belay_proto::server::{is_reserved_channel, params_digest, Begin};
use belay_proto::Instant;
use belay_server::broker::PublishError;
use belay_server::Lifecycle;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{error, Api, MAX_BROADCAST};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PublishBody {
    pub(crate) channel: String,
    pub(crate) data: Value,
    #[serde(default)]
    pub(crate) idempotency_key: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DisconnectBody {
    user: String,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BroadcastBody {
    channels: Vec<String>,
    data: Value,
}

/// The body, within the limit and the server's `body_timeout`, parsed as
/// `T`.
pub(crate) async fn body<T: DeserializeOwned>(api: &Api, body: Body) -> Result<T, Response> {
    let timeout = api.server.body_timeout();
    let bytes = tokio::time::timeout(timeout, axum::body::to_bytes(body, api.max_body))
        .await
        .map_err(|_| {
            let mut answer = error(
                StatusCode::REQUEST_TIMEOUT,
                "timeout",
                format!("the body did not arrive within {} ms", timeout.as_millis()),
            );
            // The rest of the body may still come: the connection cannot
            // carry another request, so it closes.
            answer.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
            answer
        })?
        .map_err(|_| {
            error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                format!("the body is over {} bytes", api.max_body),
            )
        })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("invalid body: {e}"),
        )
    })
}

/// The API's channel names: printable ASCII without spaces, 1 to 255
/// characters (so a name's length in characters is its length in bytes,
/// and spec/http-api.yaml states the rule exactly).
pub(crate) fn bad_channel(name: &str) -> Option<Response> {
    if (1..=255).contains(&name.len()) && name.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        None
    } else {
        Some(error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "channel: 1 to 255 printable ASCII characters, no spaces",
        ))
    }
}

/// A 403 `reserved_channel` when `name` is one of the server's own
/// channels (`$…`: host calls, host states, presence, a host's data):
/// the server alone writes them, so a backend cannot forge a host call,
/// a host's state or a join.
pub(crate) fn reserved_channel(name: &str) -> Option<Response> {
    is_reserved_channel(name).then(|| {
        error(
            StatusCode::FORBIDDEN,
            "reserved_channel",
            format!("{name:?} is a server channel (`$…`): only the server publishes to it"),
        )
    })
}

fn published(p: &Publication) -> Value {
    json!({"channel": p.channel, "epoch": p.epoch, "offset": p.offset})
}

fn refused(e: &PublishError) -> Response {
    match e {
        PublishError::TooLarge { .. } => {
            error(StatusCode::PAYLOAD_TOO_LARGE, "too_large", e.to_string())
        }
        PublishError::Unavailable(_) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            e.to_string(),
        ),
        _ => error(StatusCode::BAD_REQUEST, "bad_request", e.to_string()),
    }
}

/// The API's clock for its idempotency keys.
fn now(api: &Api) -> Instant {
    let elapsed = api.started.elapsed();
    Instant::ZERO + elapsed
}

pub(crate) async fn publish(State(api): State<Api>, request: Request) -> Response {
    let publish: PublishBody = match body(&api, request.into_body()).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    publish_once(&api, publish).await
}

/// Publish `publish.data` to `publish.channel`, once per idempotency key.
pub(crate) async fn publish_once(api: &Api, publish: PublishBody) -> Response {
    if let Some(response) =
        bad_channel(&publish.channel).or_else(|| reserved_channel(&publish.channel))
    {
        return response;
    }
    let Some(key) = publish.idempotency_key.clone() else {
        return match api.server.publish(&publish.channel, publish.data).await {
            Ok(p) => Json(published(&p)).into_response(),
            Err(e) => refused(&e),
        };
    };
    let scope = "api\u{0}publish";
    let digest = params_digest(&json!([publish.channel, publish.data]));
    let begin = api
        .keys
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .begin(now(api), scope, &key, digest);
    match begin {
        Begin::New => {}
        Begin::Done(Reply::Result(stored)) => {
            return (
                StatusCode::OK,
                [("content-type", "application/json")],
                stored.get().to_owned(),
            )
                .into_response()
        }
        Begin::InFlight => {
            return error(
                StatusCode::CONFLICT,
                "in_flight",
                "this key is being published now: retry",
            )
        }
        Begin::Conflict => {
            return error(
                StatusCode::CONFLICT,
                "idempotency_conflict",
                "idempotency key reused with another body",
            )
        }
        _ => {
            return error(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "too many idempotency keys held",
            )
        }
    }
    let outcome = api.server.publish(&publish.channel, publish.data).await;
    let mut keys = api.keys.lock().unwrap_or_else(PoisonError::into_inner);
    match outcome {
        Ok(p) => {
            let answer = published(&p);
            keys.complete(now(api), scope, &key, &Reply::Result(answer.clone().into()));
            Json(answer).into_response()
        }
        Err(e) => {
            // Nothing was published: a retry publishes.
            keys.abandon(scope, &key);
            refused(&e)
        }
    }
}

pub(crate) async fn broadcast(State(api): State<Api>, request: Request) -> Response {
    let broadcast: BroadcastBody = match body(&api, request.into_body()).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    if broadcast.channels.is_empty() || broadcast.channels.len() > MAX_BROADCAST {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("channels: 1 to {MAX_BROADCAST} names"),
        );
    }
    // Every name is checked before anything is published: a refused
    // broadcast publishes nothing.
    if let Some(response) = broadcast
        .channels
        .iter()
        .find_map(|c| bad_channel(c).or_else(|| reserved_channel(c)))
    {
        return response;
    }
    let mut results = Vec::with_capacity(broadcast.channels.len());
    for channel in &broadcast.channels {
        results.push(
            match api.server.publish(channel, broadcast.data.clone()).await {
                Ok(p) => published(&p),
                Err(e) => {
                    let code = match e {
                        PublishError::TooLarge { .. } => "too_large",
                        PublishError::Unavailable(_) => "unavailable",
                        _ => "bad_request",
                    };
                    json!({"channel": channel, "error": {"code": code, "message": e.to_string()}})
                }
            },
        );
    }
    Json(json!({ "results": results })).into_response()
}

pub(crate) async fn info(State(api): State<Api>) -> Response {
    let server = &api.server;
    let lifecycle = match server.lifecycle() {
        Lifecycle::Serving => "serving",
        Lifecycle::Draining => "draining",
        _ => "drained",
    };
    Json(json!({
        "lifecycle": lifecycle,
        "uptime_ms": u64::try_from(server.uptime().as_millis()).unwrap_or(u64::MAX),
        "connections": server.metrics().open_connections(),
    }))
    .into_response()
}

pub(crate) async fn disconnect(State(api): State<Api>, request: Request) -> Response {
    let body: DisconnectBody = match body(&api, request.into_body()).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    if body.user.is_empty() || body.user.chars().count() > 256 {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "user: 1 to 256 characters",
        );
    }
    let reason = body
        .reason
        .unwrap_or_else(|| "by the application".to_owned());
    let reason: String = reason.chars().take(80).collect();
    let disconnected = match &api.cluster {
        Some(cluster) => match cluster.disconnect_user(&body.user, &reason).await {
            Ok(n) => n,
            Err(message) => return error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message),
        },
        None => api.server.disconnect_user(&body.user, &reason),
    };
    Json(json!({ "disconnected": disconnected })).into_response()
}
