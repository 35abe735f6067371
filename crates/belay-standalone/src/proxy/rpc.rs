//! [`RpcProxy`]: a client's request becomes a POST to the application's
//! backend, so the backend needs no Belay code: every method the server
//! does not know itself is the backend's.
//!
//! The POST's body is `{"method", "params", "user", "session",
//! "idempotency_key"}` (JSON); the backend answers `200 {"result": …}` or
//! `{"error": {"code", "message"}}` (with 200 or a 4xx status). Every
//! client request still settles exactly once, and its error says truthfully
//! whether the backend may have run it (spec/PROTOCOL.md §4.5; the table
//! in [the module above](super)).

use std::time::Duration;

use belay_server::rpc::{CallContext, Methods, RpcError};
use hyper::StatusCode;
use serde_json::{json, Value};

use super::{Backend, BackendTls, Failure, ProxyError};

/// Forwards requests to the backend.
#[derive(Clone, Debug)]
pub struct RpcProxy {
    backend: Backend,
}

impl RpcProxy {
    /// A proxy to `url` (`http://…` or `https://…`), each call answered
    /// within `timeout`, at most `max_in_flight` at once.
    pub fn new(url: &str, timeout: Duration, max_in_flight: usize) -> Result<RpcProxy, ProxyError> {
        RpcProxy::with_tls(url, timeout, max_in_flight, &BackendTls::default())
    }

    /// As [`RpcProxy::new`], an `https://` backend's certificate checked as
    /// `tls` says.
    pub fn with_tls(
        url: &str,
        timeout: Duration,
        max_in_flight: usize,
        tls: &BackendTls,
    ) -> Result<RpcProxy, ProxyError> {
        Ok(RpcProxy {
            backend: Backend::with_tls(url, timeout, max_in_flight, tls)?,
        })
    }

    /// Read the backend's answers up to `max` bytes (default
    /// [`DEFAULT_MAX_RESPONSE_BYTES`](super::DEFAULT_MAX_RESPONSE_BYTES)):
    /// a longer one is cut as it streams and the request fails
    /// `too_large` (the backend ran it).
    pub fn with_max_response_bytes(mut self, max: usize) -> Self {
        self.backend = self.backend.with_max_response_bytes(max);
        self
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
        let body = json!({
            "method": method,
            "params": params,
            "user": ctx.principal.user,
            "session": &*ctx.session,
            "idempotency_key": ctx.idempotency_key,
        });
        match self.backend.post(&body).await {
            Ok((status, bytes)) => answer(status, &bytes),
            Err(Failure::NotSent) => Err(RpcError::unavailable(
                "the backend is unreachable or busy (not executed)",
            )),
            Err(Failure::TooLarge) => Err(RpcError::new(
                "too_large",
                "the backend's answer is over the proxy's max_response_bytes (it ran)",
            )),
            Err(Failure::Timeout) => Err(RpcError::new(
                "timeout",
                "the backend did not answer in time (it may have run)",
            )),
            Err(_) => Err(RpcError::internal(
                "the connection to the backend broke before its answer (it may have run)",
            )),
        }
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
