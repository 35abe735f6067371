//! What the admin API returns: proxies as JSON, and errors with a status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use serde_json::json;

use crate::counters::CountersSnapshot;
use crate::fault::Fault;
use crate::proxy::{Proxy, ProxyError};
use crate::toxic::Toxic;

/// One proxy as JSON.
#[derive(Debug, Serialize)]
pub(super) struct ProxyView {
    name: String,
    listen: String,
    upstream: String,
    seed: u64,
    fault: Fault,
    toxics: Vec<Toxic>,
    timeline_running: bool,
    counters: CountersSnapshot,
}

impl ProxyView {
    pub(super) fn of(name: &str, proxy: &Proxy) -> ProxyView {
        ProxyView {
            name: name.to_owned(),
            listen: proxy.local_addr().to_string(),
            upstream: proxy.upstream().to_string(),
            seed: proxy.seed(),
            fault: proxy.fault(),
            toxics: proxy.toxics(),
            timeline_running: proxy.timeline_running(),
            counters: proxy.counters(),
        }
    }
}

/// A [`ProxyError`] as an HTTP answer: `{"error": "…"}` with a status that
/// says whose fault it is.
pub(super) struct ApiError(pub(super) StatusCode, pub(super) String);

impl ApiError {
    pub(super) fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError(StatusCode::BAD_REQUEST, message.into())
    }
}

impl From<ProxyError> for ApiError {
    fn from(error: ProxyError) -> ApiError {
        let status = match &error {
            ProxyError::NoSuchProxy(_) | ProxyError::NoSuchToxic(_) => StatusCode::NOT_FOUND,
            ProxyError::DuplicateProxy(_) | ProxyError::DuplicateToxic(_) => StatusCode::CONFLICT,
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError(status, error.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

/// Parse a JSON body, or say in a 400 what is wrong with it.
pub(super) fn parse<T: serde::de::DeserializeOwned>(what: &str, body: &str) -> Result<T, ApiError> {
    serde_json::from_str(body).map_err(|e| ApiError::bad_request(format!("not a {what}: {e}")))
}
