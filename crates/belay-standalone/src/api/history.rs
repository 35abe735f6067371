//! `POST /api/history` `{channel, limit?, since?: {offset, epoch}, reverse?}`
//! → `{"publications": [{offset, data}], "epoch", "offset", "truncated"}`:
//! a channel's retained publications and its position (epoch and top
//! offset), as Centrifugo's history API. A channel with no history is an
//! empty list at its position. Forward (the default) reads after `since`
//! (or from the oldest held), `reverse` before it (or from the top),
//! newest first; at most `limit` ([`MAX_HISTORY`], the default) and
//! [`MAX_HISTORY_BYTES`] of data (the first publication always goes in;
//! `truncated` says the bytes ended the page). A `since` of another epoch,
//! or beyond the top, is 409 (`epoch_changed`, `beyond_top`) with the
//! current `position`: its history is gone, as a subscribe would say
//! `recovered: false`.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use belay_proto::message::StreamPosition;
use belay_proto::server::MAX_OFFSET;
use belay_server::broker::{HistoryError, HistoryQuery};
use serde_json::{json, Map, Value};

use super::handlers::{bad_channel, body};
use super::{error, Api, MAX_HISTORY, MAX_HISTORY_BYTES};

/// A history request, checked field by field.
#[derive(Debug)]
struct HistoryRequest {
    channel: String,
    query: HistoryQuery,
}

pub(crate) async fn history(State(api): State<Api>, request: Request) -> Response {
    let value: Value = match body(&api, request.into_body()).await {
        Ok(v) => v,
        Err(response) => return response,
    };
    let request = match parse(value) {
        Ok(r) => r,
        Err(message) => return error(StatusCode::BAD_REQUEST, "bad_request", message),
    };
    if let Some(response) = bad_channel(&request.channel) {
        return response;
    }
    match api.server.history(&request.channel, request.query).await {
        Ok(page) => Json(page).into_response(),
        Err(e) => refused(&e),
    }
}

fn refused(e: &HistoryError) -> Response {
    let moved = |code: &str, current: &StreamPosition| {
        (
            StatusCode::CONFLICT,
            Json(json!({
                "error": {"code": code, "message": e.to_string()},
                "position": {"epoch": current.epoch, "offset": current.offset},
            })),
        )
            .into_response()
    };
    match e {
        HistoryError::EpochChanged { current } => moved("epoch_changed", current),
        HistoryError::BeyondTop { current } => moved("beyond_top", current),
        HistoryError::Unsupported => {
            error(StatusCode::NOT_IMPLEMENTED, "unsupported", e.to_string())
        }
        _ => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            e.to_string(),
        ),
    }
}

/// The body's fields, each checked, or a message naming the bad one (a
/// `null` is not a value any field takes). The channel's name is checked
/// apart.
fn parse(value: Value) -> Result<HistoryRequest, String> {
    let Value::Object(mut fields) = value else {
        return Err("the body must be a JSON object".into());
    };
    unknown(&fields, &["channel", "limit", "since", "reverse"], "")?;
    let channel = match fields.remove("channel") {
        Some(Value::String(c)) => c,
        Some(_) => return Err("channel: a string".into()),
        None => return Err("missing field `channel`".into()),
    };
    let limit = match fields.remove("limit") {
        None => MAX_HISTORY,
        Some(v) => match v.as_u64() {
            Some(n) if n <= MAX_HISTORY as u64 => n as usize,
            _ => return Err(format!("limit: an integer from 0 to {MAX_HISTORY}")),
        },
    };
    let reverse = match fields.remove("reverse") {
        None => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err("reverse: true or false".into()),
    };
    let mut query = HistoryQuery::new(limit)
        .reverse(reverse)
        .max_bytes(MAX_HISTORY_BYTES);
    match fields.remove("since") {
        None => {}
        Some(Value::Object(since)) => query = query.since(position(since)?),
        Some(_) => return Err("since: an object {offset, epoch}".into()),
    }
    Ok(HistoryRequest { channel, query })
}

fn position(mut since: Map<String, Value>) -> Result<StreamPosition, String> {
    unknown(&since, &["offset", "epoch"], "since.")?;
    let offset = match since.remove("offset") {
        Some(v) => match v.as_u64() {
            Some(n) if n <= MAX_OFFSET => n,
            _ => return Err(format!("since.offset: an integer from 0 to {MAX_OFFSET}")),
        },
        None => return Err("missing field `since.offset`".into()),
    };
    let epoch = match since.remove("epoch") {
        Some(Value::String(e)) if e.chars().count() <= 255 => e,
        Some(_) => return Err("since.epoch: a string of at most 255 characters".into()),
        None => return Err("missing field `since.epoch`".into()),
    };
    Ok(StreamPosition { epoch, offset })
}

/// Refuse the first field not in `known`, naming it.
fn unknown(fields: &Map<String, Value>, known: &[&str], prefix: &str) -> Result<(), String> {
    match fields.keys().find(|k| !known.contains(&k.as_str())) {
        Some(field) => Err(format!(
            "unknown field `{prefix}{field}`, expected one of {}",
            known
                .iter()
                .map(|k| format!("`{prefix}{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Ok(()),
    }
}
