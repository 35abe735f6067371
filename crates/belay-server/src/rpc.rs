//! RPC: typed async methods with error codes.
//!
//! ```
//! # use belay_server::rpc::{Methods, RpcError};
//! #[derive(serde::Deserialize)]
//! struct Sum { a: i64, b: i64 }
//! let mut methods = Methods::new();
//! methods.register("sum", |_ctx, p: Sum| async move { Ok::<_, RpcError>(p.a + p.b) });
//! assert!(methods.contains("sum"));
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use belay_proto::message::{ErrorBody, Payload};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::auth::Principal;

/// An error a method returns; becomes `response.error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {message}")]
pub struct RpcError {
    /// Machine-readable code (see spec/PROTOCOL.md §4.5).
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// Suggested retry delay.
    pub retry_after_ms: Option<u64>,
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        RpcError {
            code: code.into(),
            message: message.into(),
            retry_after_ms: None,
        }
    }

    /// `bad_request`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        RpcError::new("bad_request", message)
    }

    /// `unavailable`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        RpcError::new("unavailable", message)
    }

    /// `internal`.
    pub fn internal(message: impl Into<String>) -> Self {
        RpcError::new("internal", message)
    }

    pub(crate) fn into_body(self) -> ErrorBody {
        ErrorBody {
            code: self.code,
            message: self.message,
            retry_after_ms: self.retry_after_ms,
        }
    }
}

/// What a method knows about its caller.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallContext {
    /// The authenticated caller.
    pub principal: Principal,
    /// The session id.
    pub session: Arc<str>,
    /// The idempotency key, if the client sent one.
    pub idempotency_key: Option<String>,
    /// The server the method runs in: publish from a method with
    /// `ctx.server.publish(..)`.
    pub server: crate::Server,
}

type BoxFuture = Pin<Box<dyn Future<Output = Result<Payload, RpcError>> + Send>>;
type Handler = dyn Fn(CallContext, Payload) -> BoxFuture + Send + Sync;

/// The registered methods.
#[derive(Clone, Default)]
pub struct Methods {
    table: HashMap<String, Arc<Handler>>,
}

impl std::fmt::Debug for Methods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.table.keys()).finish()
    }
}

impl Methods {
    /// No methods.
    pub fn new() -> Self {
        Methods::default()
    }

    /// Register `name`. Parameters that do not deserialize into `P` are
    /// answered with `bad_request` without calling the method.
    pub fn register<P, R, F, Fut>(&mut self, name: &str, method: F) -> &mut Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + Send + 'static,
        F: Fn(CallContext, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        let method = Arc::new(method);
        let handler = move |ctx: CallContext, params: Payload| -> BoxFuture {
            let method = Arc::clone(&method);
            Box::pin(async move {
                let params: P = serde_json::from_value(params)
                    .map_err(|e| RpcError::bad_request(format!("invalid params: {e}")))?;
                let result = method(ctx, params).await?;
                serde_json::to_value(result)
                    .map_err(|e| RpcError::internal(format!("unserializable result: {e}")))
            })
        };
        self.table.insert(name.to_owned(), Arc::new(handler));
        self
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.table.contains_key(name)
    }

    /// Call `name`; `unknown_method` if it is not registered.
    pub(crate) fn call(&self, name: &str, ctx: CallContext, params: Payload) -> BoxFuture {
        match self.table.get(name) {
            Some(handler) => handler(ctx, params),
            None => {
                let message = format!("no method {name:?}");
                Box::pin(async move { Err(RpcError::new("unknown_method", message)) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx() -> CallContext {
        CallContext {
            principal: Principal::anonymous(),
            session: Arc::from("s"),
            idempotency_key: None,
            server: crate::Server::builder().build(),
        }
    }

    #[tokio::test]
    async fn typed_params_and_results_round_trip() {
        let mut m = Methods::new();
        m.register(
            "double",
            |_c, n: i64| async move { Ok::<_, RpcError>(n * 2) },
        );
        assert_eq!(m.call("double", ctx(), json!(21)).await, Ok(json!(42)));
    }

    #[tokio::test]
    async fn bad_params_are_a_bad_request_and_unknown_methods_say_so() {
        let mut m = Methods::new();
        m.register(
            "double",
            |_c, n: i64| async move { Ok::<_, RpcError>(n * 2) },
        );
        let err = m.call("double", ctx(), json!("x")).await.unwrap_err();
        assert_eq!(err.code, "bad_request");
        let err = m.call("nope", ctx(), json!(null)).await.unwrap_err();
        assert_eq!(err.code, "unknown_method");
    }
}
