//! The HTTP answers to an upgrade request that is refused: not an upgrade
//! at all (405/400), or refused by the core's checks (403/429/503, with
//! `Retry-After`).

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use belay_proto::server::UpgradeVerdict;

/// The request is not a WebSocket upgrade: HTTP 405 for another method,
/// else 400.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NotAnUpgrade {
    /// Not a `GET`.
    Method,
    /// Not HTTP/1.1 or later, or the upgrade headers are missing or wrong.
    Headers,
}

impl IntoResponse for NotAnUpgrade {
    fn into_response(self) -> Response {
        match self {
            NotAnUpgrade::Method => (
                StatusCode::METHOD_NOT_ALLOWED,
                [(header::ALLOW, "GET")],
                "a WebSocket upgrade is a GET",
            )
                .into_response(),
            NotAnUpgrade::Headers => {
                (StatusCode::BAD_REQUEST, "expected a WebSocket upgrade").into_response()
            }
        }
    }
}

/// The HTTP answer to an upgrade the core refused.
pub(crate) fn answer(verdict: UpgradeVerdict) -> Response {
    let UpgradeVerdict::Refuse {
        status,
        retry_after_secs,
        reason,
    } = verdict
    else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = (status, reason).into_response();
    if let Some(secs) = retry_after_secs {
        if let Ok(value) = HeaderValue::from_str(&secs.to_string()) {
            response.headers_mut().insert(header::RETRY_AFTER, value);
        }
    }
    response
}
