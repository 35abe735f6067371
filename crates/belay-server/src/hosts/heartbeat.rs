//! `POST /hosts/heartbeat`: the control-plane heartbeat of a resident
//! host, which it already calls to say it is alive; the answer says
//! whether anyone needs it now (docs/HOSTS.md).
//!
//! | request | answer |
//! | --- | --- |
//! | `Authorization: Bearer <host token>` | 200 `{"host": ID, "needed": bool, "state": "...", "interval_ms": N}` |
//! | no token, or one the authenticator refuses | 401 `{"error": "unauthorized", "message": ...}` |
//! | a valid token that names no host | 403 `forbidden` |
//! | the authenticator cannot decide now | 503 `unavailable` |
//! | a new host while the registry is full | 503 `unavailable` |
//!
//! The host's id comes from its credentials, never from the request, so a
//! host cannot claim another's id.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::auth::AuthError;
use crate::Server;

/// The route's handler.
pub(crate) async fn heartbeat(State(server): State<Server>, headers: HeaderMap) -> Response {
    let shared = &server.shared;
    let token = crate::auth::bearer(&headers);
    let principal = match crate::access::settle(shared.auth.check_connect(token.as_deref())).await {
        Ok(principal) => principal,
        Err(error) => return refused(&error),
    };
    let Some(host) = principal.host.clone() else {
        return refused(&AuthError::Forbidden(
            "these credentials name no host (JWT claim `host`)".into(),
        ));
    };
    // In a cluster: recorded for every node, and what they say counts.
    shared.hosts.share_beat(shared, &host).await;
    match shared.hosts.beat(shared, &host) {
        Ok(beat) => Json(serde_json::json!({
            "host": &*host,
            "needed": beat.needed,
            "state": beat.state.as_str(),
            "interval_ms": u64::try_from(shared.config.host_timing.heartbeat_interval.as_millis())
                .unwrap_or(u64::MAX),
        }))
        .into_response(),
        Err(_) => refused(&AuthError::Unavailable(
            "the relay holds as many hosts as it may".into(),
        )),
    }
}

fn refused(error: &AuthError) -> Response {
    let status = match error {
        AuthError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
        AuthError::Forbidden(_) => StatusCode::FORBIDDEN,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    let body = Json(serde_json::json!({ "error": error.code(), "message": error.to_string() }));
    (status, body).into_response()
}
