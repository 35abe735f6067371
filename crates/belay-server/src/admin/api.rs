//! The admin JSON routes the web UI reads and acts through (behind the
//! guard; docs/OPERATIONS.md lists them with examples):
//!
//! | route | answer |
//! |---|---|
//! | `GET /admin/overview` | this node: id, lifecycle, uptime, connections, counters ([`NodeStats`](crate::NodeStats)) |
//! | `GET /admin/samples` | the live charts' recent past: one sample a second, the last 300 (`admin_state::KEPT`) |
//! | `GET /admin/sessions?user=U` | `U`'s connections on this node: session, transport, codec, age |
//! | `GET /admin/channels?pattern=P` | channels with subscribers on this node (`*` by default), at most [`MAX_CHANNELS`] |
//! | `GET /admin/channel?name=C` | one channel: subscribers here, history size and top offset, presence, the last publications |
//! | `POST /admin/disconnect` `{"user", "reason"?}` | closes the user's connections 4003: `{"disconnected": n}` |
//! | `POST /admin/publish` `{"channel", "data"}` | a test message: `{"channel", "epoch", "offset"}` |
//!
//! Bad input answers 400 with `{"error": "…"}` naming the field; a body
//! over [`MAX_BODY`] 413, one not in full within the server's body
//! timeout 408; a server channel (`$…`) 403; what the broker cannot answer
//! 501 or 503.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use belay_proto::server::{is_reserved_channel, BadBody, ChannelPattern};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::broker::{ChannelQuery, HistoryError, HistoryQuery, Member, PresenceError};
use crate::Server;

/// The longest body an admin action takes.
pub(super) const MAX_BODY: usize = 64 << 10;
/// Channels one `/admin/channels` answer lists at most.
pub(super) const MAX_CHANNELS: usize = 200;
/// Publications `/admin/channel` shows at most (the newest).
pub(super) const RECENT: usize = 10;
/// Bytes of their data at most.
const RECENT_BYTES: usize = 16 << 10;
/// The longest user id or channel name a query takes.
const MAX_NAME: usize = 1_024;

pub(super) fn routes() -> Router<Server> {
    Router::new()
        .route("/admin/overview", get(overview))
        .route("/admin/samples", get(samples))
        .route("/admin/sessions", get(sessions))
        .route("/admin/channels", get(channels))
        .route("/admin/channel", get(channel))
        .route("/admin/disconnect", post(disconnect))
        .route("/admin/publish", post(publish))
}

/// A JSON error answer.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    let message: String = message.into();
    (status, Json(json!({ "error": message }))).into_response()
}

/// `body` as JSON of type `T`, read as every bounded body is
/// ([`read_body`](crate::request_body::read_body): at most `max` bytes,
/// in full within the server's body timeout); or the error answer (408
/// closes the connection: the rest of the body may still come).
pub(super) async fn json_body<T: DeserializeOwned>(
    server: &Server,
    body: Body,
    max: usize,
) -> Result<T, Response> {
    let read = crate::request_body::read_body(body, max, server.body_timeout()).await;
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(BadBody::TooLarge) => {
            return Err(error(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("body over {max} bytes"),
            ))
        }
        Err(BadBody::NotUtf8) => return Err(error(StatusCode::BAD_REQUEST, "body not UTF-8")),
        Err(_) => {
            let mut answer = error(StatusCode::REQUEST_TIMEOUT, "body not in full in time");
            answer
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return Err(answer);
        }
    };
    serde_json::from_slice(&bytes).map_err(|e| error(StatusCode::BAD_REQUEST, e.to_string()))
}

/// Query parameter `key`, 1 to [`MAX_NAME`] bytes; or what is wrong with it.
fn name<'q>(query: &'q HashMap<String, String>, key: &str) -> Result<&'q str, String> {
    match query.get(key) {
        Some(v) if !v.is_empty() && v.len() <= MAX_NAME => Ok(v),
        Some(_) => Err(format!("{key}: 1 to {MAX_NAME} bytes")),
        None => Err(format!("{key} is missing")),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

async fn overview(State(server): State<Server>) -> Response {
    let shared = &server.shared;
    Json(json!({
        "node": shared.node_id(),
        "stats": server.stats(),
        "deliveries": shared.metrics.deliveries(),
        "token_required": shared.config.admin_token.is_some(),
    }))
    .into_response()
}

async fn samples(State(server): State<Server>) -> Response {
    let live = super::live::started(&server);
    Json(json!({
        "every_ms": millis(super::live::EVERY),
        "samples": live.recent(),
    }))
    .into_response()
}

async fn sessions(
    State(server): State<Server>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let user = match name(&query, "user") {
        Ok(user) => user,
        Err(wrong) => return error(StatusCode::BAD_REQUEST, wrong),
    };
    let sessions = server.sessions_of(user).await;
    Json(json!({ "user": user, "sessions": sessions })).into_response()
}

async fn channels(
    State(server): State<Server>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let pattern = query.get("pattern").map_or("*", String::as_str);
    if pattern.is_empty() || pattern.len() > MAX_NAME {
        return error(
            StatusCode::BAD_REQUEST,
            format!("pattern: 1 to {MAX_NAME} bytes"),
        );
    }
    let query =
        ChannelQuery::new(ChannelPattern::new(pattern)).bounded(MAX_CHANNELS, MAX_CHANNELS * 256);
    match server.list_channels(&query) {
        Ok(list) => {
            let channels: Vec<Value> = list
                .channels
                .iter()
                .map(|c| json!({ "channel": c.channel, "subscribers": c.subscribers }))
                .collect();
            Json(json!({
                "channels": channels,
                "matched": list.matched,
                "subscriptions": list.subscriptions,
                "truncated": list.truncated,
            }))
            .into_response()
        }
        Err(e) => error(StatusCode::NOT_IMPLEMENTED, e.to_string()),
    }
}

async fn channel(
    State(server): State<Server>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let channel = match name(&query, "name") {
        Ok(channel) => channel.to_owned(),
        Err(wrong) => return error(StatusCode::BAD_REQUEST, wrong),
    };
    // A name with `*` would list as a pattern: its subscribers are not
    // counted.
    let subscribers = if channel.contains('*') {
        None
    } else {
        let query = ChannelQuery::new(ChannelPattern::new(channel.clone())).bounded(1, MAX_NAME);
        server.list_channels(&query).ok().map(|l| l.subscriptions)
    };
    let history = history_of(&server, &channel).await;
    let presence = match server.presence(&channel).await {
        Ok(members) => json!(members.iter().map(Member::to_json).collect::<Vec<_>>()),
        Err(PresenceError::NotTracked(_)) => Value::Null,
        Err(other) => json!({ "error": other.to_string() }),
    };
    Json(json!({
        "channel": channel,
        "subscribers": subscribers,
        "history": history,
        "presence": presence,
    }))
    .into_response()
}

/// The channel's history at a glance: top offset, epoch, how many
/// publications are kept, and the newest few.
async fn history_of(server: &Server, channel: &str) -> Value {
    let newest = server
        .history(
            channel,
            HistoryQuery::new(RECENT)
                .reverse(true)
                .max_bytes(RECENT_BYTES),
        )
        .await;
    let page = match newest {
        Ok(page) => page,
        Err(HistoryError::Unsupported) => return json!({ "error": "the broker keeps no history" }),
        Err(other) => return json!({ "error": other.to_string() }),
    };
    let oldest = server.history(channel, HistoryQuery::new(1)).await;
    let kept = match oldest
        .ok()
        .and_then(|p| p.publications.first().map(|p| p.offset))
    {
        Some(first) => page.position.offset.saturating_sub(first) + 1,
        None => 0,
    };
    let recent: Vec<Value> = page
        .publications
        .iter()
        .map(|p| {
            let data: Value = serde_json::from_str(p.data.get()).unwrap_or(Value::Null);
            json!({ "offset": p.offset, "data": data })
        })
        .collect();
    json!({
        "epoch": page.position.epoch,
        "top_offset": page.position.offset,
        "size": kept,
        "recent": recent,
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DisconnectBody {
    user: String,
    #[serde(default)]
    reason: Option<String>,
}

async fn disconnect(State(server): State<Server>, body: Body) -> Response {
    let body: DisconnectBody = match json_body(&server, body, MAX_BODY).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    if body.user.is_empty() || body.user.len() > MAX_NAME {
        return error(
            StatusCode::BAD_REQUEST,
            format!("user: 1 to {MAX_NAME} bytes"),
        );
    }
    let reason = body.reason.unwrap_or_else(|| "by an operator".to_owned());
    if reason.len() > 100 {
        return error(StatusCode::BAD_REQUEST, "reason: at most 100 bytes");
    }
    let disconnected = server.disconnect_user(&body.user, &reason);
    tracing::info!(target: "belay::server", user = %body.user, disconnected, "admin disconnected a user");
    Json(json!({ "disconnected": disconnected })).into_response()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PublishBody {
    channel: String,
    data: Value,
}

async fn publish(State(server): State<Server>, body: Body) -> Response {
    let body: PublishBody = match json_body(&server, body, MAX_BODY).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    if is_reserved_channel(&body.channel) {
        return error(
            StatusCode::FORBIDDEN,
            format!("{:?} is one of the server's own channels", body.channel),
        );
    }
    match server.publish(&body.channel, body.data).await {
        Ok(p) => {
            tracing::info!(target: "belay::server", channel = %p.channel, offset = p.offset, "admin published a test message");
            Json(json!({ "channel": p.channel, "epoch": p.epoch, "offset": p.offset }))
                .into_response()
        }
        Err(crate::broker::PublishError::Unavailable(why)) => {
            error(StatusCode::SERVICE_UNAVAILABLE, why.to_string())
        }
        Err(refused) => error(StatusCode::BAD_REQUEST, refused.to_string()),
    }
}
