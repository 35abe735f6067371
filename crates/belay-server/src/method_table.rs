//! The application's methods as the server's shared state holds them: a
//! table called by name with the caller's identity and a handle of the
//! server, whatever that handle's type.
//!
//! The shared state cannot name [`rpc::Methods`](crate::rpc::Methods)
//! directly: a method's `CallContext` holds the `Server`, which holds the
//! shared state, so the two modules would import each other. The shared
//! state holds a `dyn MethodTable<Server>` instead; `rpc` implements it.
//! This module imports none of the server's parts.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use belay_proto::message::{ErrorBody, Payload};

use crate::auth::Principal;

/// Who calls a method, and the server it runs in.
pub(crate) struct Caller<S> {
    /// The authenticated caller.
    pub(crate) principal: Principal,
    /// The caller's session id.
    pub(crate) session: Arc<str>,
    /// The request's idempotency key, if it has one.
    pub(crate) idempotency_key: Option<String>,
    /// The server the method runs in.
    pub(crate) server: S,
}

/// A method's answer: its result, or the error body of `response.error`.
pub(crate) type Answer = Pin<Box<dyn Future<Output = Result<Payload, ErrorBody>> + Send>>;

/// Methods callable by name (`unknown_method` for a name not in the table).
pub(crate) trait MethodTable<S>: Send + Sync {
    /// Call `name` with `params` for `caller`.
    fn call(&self, name: &str, caller: Caller<S>, params: Payload) -> Answer;
}
