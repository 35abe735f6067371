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
//!
//! **Layers** run around every call, in the order they were added (the
//! first sees the call first): to time calls, shed load, or delay answers.
//! A layer gets the method's name, the context and the params, and the
//! [`Next`] step, which it may call, call later, or not call at all (then
//! its own result is the answer).
//!
//! ```
//! # use belay_server::rpc::{Methods, RpcError};
//! let mut methods = Methods::new();
//! methods.register("echo", |_ctx, v: serde_json::Value| async move { Ok::<_, RpcError>(v) });
//! methods.layer(|method, ctx, params, next| {
//!     let shed = method.starts_with("report.");
//!     async move {
//!         if shed {
//!             return Err(RpcError::unavailable("reports are paused"));
//!         }
//!         next.run(ctx, params).await
//!     }
//! });
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use belay_proto::message::{ErrorBody, Payload};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::auth::Principal;
use crate::method_table::{Answer, Caller, MethodTable};

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

/// A method name the server reserves (it starts with `$`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("method names starting with `$` are reserved for the server: {0:?}")]
pub struct ReservedMethod(pub String);

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

/// A call in progress: what a method (or a layer) is turned into.
pub type MethodFuture = Pin<Box<dyn Future<Output = Result<Payload, RpcError>> + Send>>;
type BoxFuture = MethodFuture;
type Handler = dyn Fn(CallContext, Payload) -> BoxFuture + Send + Sync;
type LayerFn = dyn Fn(&str, CallContext, Payload, Next) -> BoxFuture + Send + Sync;

/// The registered methods.
#[derive(Clone, Default)]
pub struct Methods {
    table: HashMap<String, Arc<Handler>>,
    layers: Arc<[Arc<LayerFn>]>,
}

/// The rest of a call's chain, as a [`Methods::layer`] sees it: the layers
/// added after it, then the method.
pub struct Next {
    method: Arc<str>,
    handler: Arc<Handler>,
    layers: Arc<[Arc<LayerFn>]>,
    index: usize,
}

impl std::fmt::Debug for Next {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Next")
            .field("method", &self.method)
            .field("layers_left", &(self.layers.len() - self.index))
            .finish()
    }
}

impl Next {
    /// The method called.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Go on: the next layer, or the method itself.
    pub fn run(self, ctx: CallContext, params: Payload) -> MethodFuture {
        match self.layers.get(self.index).cloned() {
            Some(layer) => {
                let method = Arc::clone(&self.method);
                let next = Next {
                    index: self.index + 1,
                    ..self
                };
                layer(&method, ctx, params, next)
            }
            None => (self.handler)(ctx, params),
        }
    }
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

    /// [`register`](Self::register), refusing a name the server reserves
    /// (one starting with `$`, such as `$publish`; spec/PROTOCOL.md §4.6).
    /// `register` itself takes such a name, but the server's built-in
    /// answers it, so the method would never run.
    pub fn try_register<P, R, F, Fut>(
        &mut self,
        name: &str,
        method: F,
    ) -> Result<&mut Self, ReservedMethod>
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + Send + 'static,
        F: Fn(CallContext, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        if name.starts_with('$') {
            return Err(ReservedMethod(name.to_owned()));
        }
        Ok(self.register(name, method))
    }

    /// Run every call (of a registered method or not) through `layer`,
    /// after the layers added before it. See the module docs.
    pub fn layer<F, Fut>(&mut self, layer: F) -> &mut Self
    where
        F: Fn(&str, CallContext, Payload, Next) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Payload, RpcError>> + Send + 'static,
    {
        let layer: Arc<LayerFn> = Arc::new(
            move |method: &str, ctx: CallContext, params: Payload, next: Next| -> BoxFuture {
                Box::pin(layer(method, ctx, params, next))
            },
        );
        let mut layers = self.layers.to_vec();
        layers.push(layer);
        self.layers = layers.into();
        self
    }

    /// Whether `name` is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.table.contains_key(name)
    }

    /// Call `name` through the layers; `unknown_method` if it is not
    /// registered.
    pub(crate) fn call(&self, name: &str, ctx: CallContext, params: Payload) -> BoxFuture {
        let handler = match self.table.get(name) {
            Some(handler) if self.layers.is_empty() => return handler(ctx, params),
            Some(handler) => Arc::clone(handler),
            None => {
                let message = format!("no method {name:?}");
                let unknown: Arc<Handler> = Arc::new(move |_ctx, _params| -> BoxFuture {
                    let message = message.clone();
                    Box::pin(async move { Err(RpcError::new("unknown_method", message)) })
                });
                unknown
            }
        };
        Next {
            method: Arc::from(name),
            handler,
            layers: Arc::clone(&self.layers),
            index: 0,
        }
        .run(ctx, params)
    }
}

impl From<Caller<crate::Server>> for CallContext {
    fn from(caller: Caller<crate::Server>) -> Self {
        CallContext {
            principal: caller.principal,
            session: caller.session,
            idempotency_key: caller.idempotency_key,
            server: caller.server,
        }
    }
}

impl MethodTable<crate::Server> for Methods {
    fn call(&self, name: &str, caller: Caller<crate::Server>, params: Payload) -> Answer {
        let answer = Methods::call(self, name, caller.into(), params);
        Box::pin(async move { answer.await.map_err(RpcError::into_body) })
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

    #[test]
    fn a_reserved_name_is_refused() {
        let mut m = Methods::new();
        let echo = |_c, v: Payload| async move { Ok::<_, RpcError>(v) };
        assert_eq!(
            m.try_register("$publish", echo).err(),
            Some(ReservedMethod("$publish".into()))
        );
        assert!(!m.contains("$publish"));
        assert!(m.try_register("echo", echo).is_ok());
    }

    #[tokio::test]
    async fn layers_run_in_the_order_added_around_every_call() {
        let mut m = Methods::new();
        m.register("echo", |_c, v: Payload| async move { Ok::<_, RpcError>(v) });
        m.layer(|method, ctx, params, next| {
            let seen = format!("outer saw {method}");
            async move {
                let inner = next.run(ctx, params).await?;
                Ok(json!([seen, inner]))
            }
        });
        m.layer(|method, ctx, params, next| {
            let known = method == "echo";
            async move {
                if !known {
                    return Err(RpcError::unavailable("inner refused"));
                }
                next.run(ctx, json!({"inner": params})).await
            }
        });
        assert_eq!(
            m.call("echo", ctx(), json!(1)).await,
            Ok(json!(["outer saw echo", {"inner": 1}]))
        );
        let refused = m.call("nope", ctx(), json!(1)).await.unwrap_err();
        assert_eq!(
            refused.message, "inner refused",
            "unknown methods pass the layers too"
        );
    }
}
