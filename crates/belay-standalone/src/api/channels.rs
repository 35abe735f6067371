//! `GET /api/channels?pattern=chat:*&after=NAME` → `{"channels": [{channel,
//! subscribers}], "truncated"}`: the channels with subscribers, in name
//! order, with how many (on this node; in a Redis cluster, on every node,
//! counts summed, and `unanswered` lists the nodes that did not answer).
//! At most [`MAX_CHANNELS`] channels and [`MAX_CHANNEL_BYTES`] of names in
//! one answer; `truncated` says more follow: ask again with `after` = the
//! last name.

use axum::extract::{Query, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use belay_proto::server::ChannelPattern;
use belay_server::broker::{ChannelList, ChannelQuery, ListError};
use serde_json::{json, Value};

use super::cluster::Unanswered;
use super::{error, Api, MAX_CHANNELS, MAX_CHANNEL_BYTES};

/// The API's channel names and patterns: printable ASCII without spaces,
/// 1 to 255 characters.
fn printable(text: &str) -> bool {
    (1..=255).contains(&text.len()) && text.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// The query string's `pattern` and `after`, each at most once, or a
/// message naming the bad one.
fn parse(uri: &Uri) -> Result<ChannelQuery, String> {
    let Query(pairs) = Query::<Vec<(String, String)>>::try_from_uri(uri)
        .map_err(|e| format!("invalid query string: {}", e.body_text()))?;
    let (mut pattern, mut after) = (None, None);
    for (name, value) in pairs {
        let slot = match name.as_str() {
            "pattern" => &mut pattern,
            "after" => &mut after,
            other => {
                return Err(format!(
                    "unknown parameter `{other}`, expected `pattern` or `after`"
                ))
            }
        };
        if slot.replace(value).is_some() {
            return Err(format!("`{name}` given twice"));
        }
    }
    let pattern = pattern.unwrap_or_else(|| "*".to_owned());
    if !printable(&pattern) {
        return Err(
            "pattern: 1 to 255 printable ASCII characters, no spaces (a name, or a prefix and `*`)"
                .into(),
        );
    }
    if after.as_deref().is_some_and(|a| !printable(a)) {
        return Err("after: 1 to 255 printable ASCII characters, no spaces".into());
    }
    Ok(ChannelQuery::new(ChannelPattern::new(pattern))
        .after(after)
        .bounded(MAX_CHANNELS, MAX_CHANNEL_BYTES))
}

/// A list as the API answers it.
pub(crate) fn listed(list: &ChannelList) -> Vec<Value> {
    list.channels
        .iter()
        .map(|c| json!({"channel": c.channel, "subscribers": c.subscribers}))
        .collect()
}

pub(crate) async fn channels(State(api): State<Api>, uri: Uri) -> Response {
    let query = match parse(&uri) {
        Ok(q) => q,
        Err(message) => return error(StatusCode::BAD_REQUEST, "bad_request", message),
    };
    let Some(cluster) = &api.cluster else {
        return match api.server.list_channels(&query) {
            Ok(list) => Json(json!({"channels": listed(&list), "truncated": list.truncated}))
                .into_response(),
            Err(e @ ListError::Unsupported) => {
                error(StatusCode::NOT_IMPLEMENTED, "unsupported", e.to_string())
            }
            Err(e) => error(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                e.to_string(),
            ),
        };
    };
    match cluster.channels(&query).await {
        Ok((list, unanswered)) => Json(json!({
            "channels": listed(&list),
            "truncated": list.truncated,
            "unanswered": unanswered.iter().map(Unanswered::to_json).collect::<Vec<_>>(),
        }))
        .into_response(),
        Err(message) => error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message),
    }
}
