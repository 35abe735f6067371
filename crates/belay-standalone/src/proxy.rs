//! [`RpcProxy`]: a client's request becomes a POST to the application's
//! backend, so the backend needs no Belay code: every method the server
//! does not know itself is the backend's.
//!
//! The POST's body is `{"method", "params", "user", "session",
//! "idempotency_key"}` (JSON); the backend answers `200 {"result": …}` or
//! `{"error": {"code", "message"}}` (with 200 or a 4xx status). Every
//! client request still settles exactly once, and its error says truthfully
//! whether the backend may have run it (spec/PROTOCOL.md §4.5):
//!
//! | what happened | code | executed? |
//! |---|---|---|
//! | the backend answered an error | its code (`internal` if it gave none) | as it says |
//! | connection refused, no route, too many calls in flight | `unavailable` | no: safe to retry |
//! | no answer within the timeout | `timeout` | unknown: retry only with an idempotency key |
//! | the connection broke after the request was sent, or a 5xx, or an answer that is not JSON | `internal` | unknown |
//!
//! Connections are pooled and kept alive; calls in flight are bounded. A
//! slow or dead backend never touches the connections' readiness: only
//! the requests wait or fail.

use std::sync::Arc;
use std::time::Duration;

use belay_server::rpc::{CallContext, Methods, RpcError};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::CONTENT_TYPE;
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio::sync::Semaphore;

/// Why an [`RpcProxy`] could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// The URL is not an `http://` URL.
    #[error("proxy URL {0:?}: expected http://HOST:PORT/PATH")]
    Url(String),
}

/// Forwards requests to the backend.
#[derive(Clone)]
pub struct RpcProxy {
    client: Client<HttpConnector, Full<Bytes>>,
    url: Uri,
    timeout: Duration,
    in_flight: Arc<Semaphore>,
}

impl std::fmt::Debug for RpcProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcProxy")
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl RpcProxy {
    /// A proxy to `url` (`http://…`), each call answered within `timeout`,
    /// at most `max_in_flight` at once.
    pub fn new(url: &str, timeout: Duration, max_in_flight: usize) -> Result<RpcProxy, ProxyError> {
        let uri: Uri = url.parse().map_err(|_| ProxyError::Url(url.to_owned()))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(ProxyError::Url(url.to_owned()));
        }
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(timeout));
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(RpcProxy {
            client,
            url: uri,
            timeout,
            in_flight: Arc::new(Semaphore::new(max_in_flight.max(1))),
        })
    }

    /// Methods that forward every call (of any name) to the backend.
    pub fn methods(&self) -> Methods {
        let proxy = self.clone();
        let mut methods = Methods::new();
        methods.layer(move |method, ctx, params, _next| {
            let proxy = proxy.clone();
            let method = method.to_owned();
            async move { proxy.call(&method, &ctx, params).await }
        });
        methods
    }

    async fn call(
        &self,
        method: &str,
        ctx: &CallContext,
        params: Value,
    ) -> Result<Value, RpcError> {
        let Ok(_permit) = self.in_flight.try_acquire() else {
            return Err(RpcError::unavailable(
                "too many calls to the backend in flight",
            ));
        };
        let body = json!({
            "method": method,
            "params": params,
            "user": ctx.principal.user,
            "session": &*ctx.session,
            "idempotency_key": ctx.idempotency_key,
        });
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| RpcError::internal(format!("request to the backend: {e}")))?;
        let exchange = async {
            let response = self.client.request(request).await.map_err(|e| {
                if e.is_connect() {
                    RpcError::unavailable("the backend is unreachable (not executed)")
                } else {
                    RpcError::internal(
                        "the connection to the backend broke before its answer (it may have run)",
                    )
                }
            })?;
            let status = response.status();
            let bytes = response
                .into_body()
                .collect()
                .await
                .map_err(|_| {
                    RpcError::internal(
                        "the connection to the backend broke during its answer (it may have run)",
                    )
                })?
                .to_bytes();
            Ok::<_, RpcError>((status, bytes))
        };
        let (status, bytes) = tokio::time::timeout(self.timeout, exchange)
            .await
            .map_err(|_| {
                RpcError::new(
                    "timeout",
                    "the backend did not answer in time (it may have run)",
                )
            })??;
        answer(status, &bytes)
    }
}

/// The backend's answer as the call's outcome.
fn answer(status: StatusCode, bytes: &[u8]) -> Result<Value, RpcError> {
    let parsed: Option<Value> = serde_json::from_slice(bytes).ok();
    if let Some(error) = parsed.as_ref().and_then(|v| v.get("error")) {
        let code = error
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or("internal");
        let message = error.get("message").and_then(Value::as_str).unwrap_or("");
        return Err(RpcError::new(code, message));
    }
    if status.is_server_error() {
        return Err(RpcError::internal(format!(
            "the backend answered {status} (it may have run)"
        )));
    }
    if !status.is_success() {
        return Err(RpcError::new(
            "bad_request",
            format!("the backend answered {status}"),
        ));
    }
    match parsed.and_then(|mut v| v.get_mut("result").map(Value::take)) {
        Some(result) => Ok(result),
        None => Err(RpcError::internal(
            "the backend's answer has no `result` (it may have run)",
        )),
    }
}
