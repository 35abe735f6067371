//! `POST /api/user_publish` `{user, data, idempotency_key?}`: publish to the
//! user channel `#USER`, which only that user's connections may subscribe
//! to (every connection of theirs, on any node: the channel goes through
//! the broker like any other, gap-free and recoverable).

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use belay_server::auth::USER_CHANNEL_PREFIX;
use serde::Deserialize;
use serde_json::Value;

use super::handlers::{body, publish_once, PublishBody};
use super::{error, Api};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UserPublishBody {
    user: String,
    data: Value,
    #[serde(default)]
    idempotency_key: Option<String>,
}

pub(crate) async fn user_publish(State(api): State<Api>, request: Request) -> Response {
    let body: UserPublishBody = match body(&api, request.into_body()).await {
        Ok(b) => b,
        Err(response) => return response,
    };
    // `#` + the user is a channel name: 1 to 254 printable ASCII characters.
    if !(1..=254).contains(&body.user.len())
        || !body.user.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return error(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "user: 1 to 254 printable ASCII characters, no spaces",
        );
    }
    let publish = PublishBody {
        channel: format!("{USER_CHANNEL_PREFIX}{}", body.user),
        data: body.data,
        idempotency_key: body.idempotency_key,
    };
    publish_once(&api, publish).await
}
