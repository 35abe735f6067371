//! [`BackendAuth`]: an [`Authenticator`] that asks the application's
//! backend. Each part is optional:
//!
//! * **connect** (`proxy.connect_url`): every `connect` and `refresh`
//!   POSTs `{"token": T|null, "refresh": bool}`; the backend answers
//!   `{"result": {"user", "expires_in_secs"?, "channels"?, "publish"?,
//!   "info"?}}` (the same grants as a JWT's claims) or an error, which
//!   closes the connection 4001 with the backend's message.
//! * **subscribe** (`proxy.subscribe_url`): a subscribe to a channel whose
//!   namespace has `subscribe = "backend"` POSTs `{"user", "channel"}`;
//!   `{"result": …}` allows it, an error refuses it with its message.
//! * **publish** (`proxy.publish_url`): a client publish to a channel
//!   whose namespace has `publish = "backend"` POSTs `{"user", "channel",
//!   "data"}`; likewise.
//!
//! Everything else is the base authenticator's (JWT, or everyone
//! anonymous). A backend that cannot answer makes a connect close 1013
//! (retried) and a subscribe or publish fail `unavailable`: never an auth
//! failure the client would not retry.

use std::sync::Arc;
use std::time::Duration;

use belay_proto::message::{Payload, RawJson};
use belay_server::auth::{AllowAll, AuthError, Authenticator, Principal, Verdict};
use serde::Deserialize;
use serde_json::{json, Value};

use super::{Backend, Failure};

/// Asks the backend; the rest is `base`'s.
#[derive(Clone)]
pub struct BackendAuth {
    base: Arc<dyn Authenticator>,
    connect: Option<Backend>,
    subscribe: Option<Backend>,
    publish: Option<Backend>,
}

impl std::fmt::Debug for BackendAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendAuth")
            .field("connect", &self.connect)
            .field("subscribe", &self.subscribe)
            .field("publish", &self.publish)
            .finish_non_exhaustive()
    }
}

impl Default for BackendAuth {
    fn default() -> Self {
        BackendAuth::new(AllowAll)
    }
}

/// What the connect proxy answers.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Identity {
    user: String,
    #[serde(default)]
    expires_in_secs: Option<u64>,
    #[serde(default)]
    channels: Option<Vec<String>>,
    #[serde(default)]
    publish: Option<Vec<String>>,
    #[serde(default)]
    info: Option<Box<serde_json::value::RawValue>>,
}

impl BackendAuth {
    /// Nothing asked of the backend yet: `base` decides everything.
    pub fn new(base: impl Authenticator) -> BackendAuth {
        BackendAuth {
            base: Arc::new(base),
            connect: None,
            subscribe: None,
            publish: None,
        }
    }

    /// Ask `backend` who every connection is (connect and refresh).
    pub fn connect_through(mut self, backend: Backend) -> Self {
        self.connect = Some(backend);
        self
    }

    /// Ask `backend` about subscribes in `subscribe = "backend"` namespaces.
    pub fn subscribe_through(mut self, backend: Backend) -> Self {
        self.subscribe = Some(backend);
        self
    }

    /// Ask `backend` about client publishes in `publish = "backend"`
    /// namespaces.
    pub fn publish_through(mut self, backend: Backend) -> Self {
        self.publish = Some(backend);
        self
    }
}

/// POST `body` and read `{"result": …}`; an error answer is `refused`'s.
async fn ask(
    backend: &Backend,
    body: Value,
    refused: fn(String) -> AuthError,
) -> Result<Value, AuthError> {
    let (status, bytes) = backend.post(&body).await.map_err(|failure| {
        AuthError::Unavailable(
            match failure {
                Failure::NotSent => "the backend is unreachable or busy",
                Failure::Timeout => "the backend did not answer in time",
                Failure::TooLarge => "the backend's answer is over the proxy's max_response_bytes",
                _ => "the connection to the backend broke",
            }
            .into(),
        )
    })?;
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    if let Some(error) = parsed.as_ref().and_then(|v| v.get("error")) {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("refused by the backend")
            .to_owned();
        return Err(match error.get("code").and_then(Value::as_str) {
            Some("unavailable") => AuthError::Unavailable(message),
            Some("unauthorized") => AuthError::Unauthorized(message),
            Some("forbidden") => AuthError::Forbidden(message),
            _ => refused(message),
        });
    }
    if !status.is_success() {
        return Err(if status.is_client_error() {
            refused(format!("the backend answered {status}"))
        } else {
            AuthError::Unavailable(format!("the backend answered {status}"))
        });
    }
    parsed
        .and_then(|mut v| v.get_mut("result").map(Value::take))
        .ok_or_else(|| AuthError::Unavailable("the backend's answer has no `result`".into()))
}

/// The principal the connect proxy's `result` describes.
fn principal(result: Value) -> Result<Principal, AuthError> {
    let identity: Identity = serde_json::from_value(result).map_err(|e| {
        AuthError::Unavailable(format!("the backend's connect answer is not usable: {e}"))
    })?;
    if identity.user.is_empty() {
        return Err(AuthError::Unavailable(
            "the backend's connect answer names an empty `user`".into(),
        ));
    }
    let mut principal = Principal::user(identity.user);
    if let Some(secs) = identity.expires_in_secs {
        principal = principal.expiring_in(Duration::from_secs(secs));
    }
    if let Some(channels) = identity.channels {
        principal = principal.subscribing_to(channels);
    }
    if let Some(publish) = identity.publish {
        principal = principal.publishing_to(publish);
    }
    if let Some(info) = identity
        .info
        .and_then(|raw| RawJson::from_json(raw.get().to_owned()).ok())
    {
        principal = principal.with_info(info);
    }
    Ok(principal)
}

/// Ask the connect proxy who `body`'s token is.
fn identify(backend: &Backend, body: Value) -> Verdict<Principal> {
    let backend = backend.clone();
    Verdict::later(async move { principal(ask(&backend, body, AuthError::Unauthorized).await?) })
}

impl Authenticator for BackendAuth {
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError> {
        self.base.authenticate(token)
    }

    fn authorize_subscribe(&self, principal: &Principal, channel: &str) -> Result<(), AuthError> {
        self.base.authorize_subscribe(principal, channel)
    }

    fn authorize_publish(&self, principal: &Principal, channel: &str) -> Result<(), AuthError> {
        self.base.authorize_publish(principal, channel)
    }

    fn authorize_request(&self, principal: &Principal, method: &str) -> Result<(), AuthError> {
        self.base.authorize_request(principal, method)
    }

    fn check_connect(&self, token: Option<&str>) -> Verdict<Principal> {
        match &self.connect {
            Some(backend) => identify(backend, json!({ "token": token, "refresh": false })),
            None => self.base.check_connect(token),
        }
    }

    fn check_refresh(&self, token: &str) -> Verdict<Principal> {
        match &self.connect {
            Some(backend) => identify(backend, json!({ "token": token, "refresh": true })),
            None => self.base.check_refresh(token),
        }
    }

    fn check_subscribe(&self, principal: &Principal, channel: &str) -> Verdict<()> {
        let Some(backend) = self.subscribe.clone() else {
            return self.base.check_subscribe(principal, channel);
        };
        let body = json!({ "user": principal.user, "channel": channel });
        Verdict::later(async move { ask(&backend, body, AuthError::Forbidden).await.map(drop) })
    }

    fn check_subscription_token(
        &self,
        principal: &Principal,
        channel: &str,
        token: Option<&str>,
    ) -> Verdict<Option<Duration>> {
        self.base
            .check_subscription_token(principal, channel, token)
    }

    fn check_publish(&self, principal: &Principal, channel: &str, data: &Payload) -> Verdict<()> {
        let Some(backend) = self.publish.clone() else {
            return self.base.check_publish(principal, channel, data);
        };
        let body = json!({ "user": principal.user, "channel": channel, "data": data });
        Verdict::later(async move { ask(&backend, body, AuthError::Forbidden).await.map(drop) })
    }
}
