//! `POST /api/presence` `{channel}` → `{"members": [{client, user, info?}]}`:
//! who is subscribed to a channel whose namespace tracks presence (404
//! `not_found` for another channel: it has no presence to show; 503
//! `unavailable` when the shared presence store cannot answer).

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use belay_server::broker::{Member, PresenceError};
use serde::Deserialize;
use serde_json::json;

use super::handlers::body;
use super::{error, Api};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PresenceBody {
    channel: String,
}

pub(crate) async fn presence(State(api): State<Api>, request: Request) -> Response {
    let body: PresenceBody = match body(&api, request.into_body()).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    if !(1..=255).contains(&body.channel.len())
        || !body.channel.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "channel: 1 to 255 printable ASCII characters, no spaces",
        );
    }
    match api.server.presence(&body.channel).await {
        Ok(members) => {
            let members: Vec<_> = members.iter().map(Member::to_json).collect();
            Json(json!({ "members": members })).into_response()
        }
        Err(PresenceError::NotTracked(_)) => error(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("channel {:?} does not track presence", body.channel),
        ),
        Err(other) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            other.to_string(),
        ),
    }
}
