//! Authentication of a connection and authorization of every message.
//!
//! The token arrives in `connect` (browsers cannot set headers on a
//! WebSocket) or, for native clients, in the `Authorization: Bearer` header
//! of the upgrade. [`Authenticator::authenticate`] turns it into a
//! [`Principal`]; every `subscribe` and `request` is then authorized for that
//! principal, not only the handshake. A principal whose credentials expire
//! is closed with 4001 so the client refreshes its token before reconnecting.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use belay_proto::message::{Payload, RawJson};
use belay_proto::server::ChannelPattern;

/// The prefix of user channels: `#USER` carries what is published to one
/// user (every connection of theirs); only that user may subscribe.
pub const USER_CHANNEL_PREFIX: char = '#';

/// The longest lifetime a credential is given, whatever a token or a
/// backend says (about 10 years): [`Principal::expiring_in`] cuts longer
/// ones to it, so an `exp` of `2^64-1` neither overflows the server's
/// clock nor means "forever".
pub const MAX_CREDENTIAL_LIFETIME: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Who is on the other end of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Principal {
    /// User id; also scopes idempotency keys.
    pub user: String,
    /// When the credentials stop being valid, on the server's clock.
    pub expires_at: Option<Instant>,
    /// Channel patterns (`news`, `chat:*`) the credentials let this
    /// principal subscribe to; `None`: the credentials do not limit it
    /// (the authenticator decides). [`Authenticator::authorize_subscribe`]'s
    /// default honours it.
    pub subscribe: Option<Arc<[String]>>,
    /// Channel patterns this principal may publish to from the client
    /// (`$publish`); `None`: no grant, and
    /// [`Authenticator::authorize_publish`]'s default refuses.
    pub publish: Option<Arc<[String]>>,
    /// What the application tells other clients about this principal
    /// (presence entries, join/leave), from the credentials (JWT `info`).
    pub info: Option<RawJson>,
    /// The resident host these credentials belong to (JWT `host`), if
    /// they are a host's: only it may hold `$host-calls:ID`, publish to
    /// `$host:ID` and answer its calls (docs/HOSTS.md).
    pub host: Option<Arc<str>>,
}

impl Principal {
    /// An anonymous principal that never expires.
    pub fn anonymous() -> Self {
        Principal {
            user: "anonymous".into(),
            expires_at: None,
            subscribe: None,
            publish: None,
            info: None,
            host: None,
        }
    }

    /// A principal for `user` without expiry.
    pub fn user(user: impl Into<String>) -> Self {
        Principal {
            user: user.into(),
            expires_at: None,
            subscribe: None,
            publish: None,
            info: None,
            host: None,
        }
    }

    /// The same principal, expiring at `at`.
    pub fn expiring_at(mut self, at: Instant) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// The same principal, expiring `left` from now (at most
    /// [`MAX_CREDENTIAL_LIFETIME`]: a value from a token or a backend is
    /// saturated, never trusted to fit).
    pub fn expiring_in(self, left: Duration) -> Self {
        let now = crate::clock::std_now();
        let at = now
            .checked_add(left.min(MAX_CREDENTIAL_LIFETIME))
            .unwrap_or(now);
        self.expiring_at(at)
    }

    /// The same principal, allowed to subscribe only to channels that
    /// match `patterns`.
    pub fn subscribing_to(mut self, patterns: impl Into<Arc<[String]>>) -> Self {
        self.subscribe = Some(patterns.into());
        self
    }

    /// The same principal, allowed to publish from the client to channels
    /// that match `patterns`.
    pub fn publishing_to(mut self, patterns: impl Into<Arc<[String]>>) -> Self {
        self.publish = Some(patterns.into());
        self
    }

    /// The same principal, described to other clients by `info`.
    pub fn with_info(mut self, info: RawJson) -> Self {
        self.info = Some(info);
        self
    }

    /// The same principal, as the credentials of the resident host `id`.
    pub fn hosting(mut self, id: impl Into<Arc<str>>) -> Self {
        self.host = Some(id.into());
        self
    }

    /// Whether these are the credentials of the host `id`.
    pub fn is_host(&self, id: &str) -> bool {
        self.host.as_deref() == Some(id)
    }

    /// Whether the credentials have expired at `now`.
    pub fn expired(&self, now: Instant) -> bool {
        self.expires_at.is_some_and(|at| now >= at)
    }
}

/// Why an authentication or authorization failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// Missing, invalid or expired credentials: close 4001 / error `unauthorized`.
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// Valid credentials without the right: error `forbidden`.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// Nobody could decide now (the backend that decides is unreachable,
    /// too slow or failing): a `connect` or `refresh` closes 1013 (the
    /// client retries with backoff); a subscribe or publish gets error
    /// `unavailable` (retryable). Not an auth failure.
    #[error("unavailable: {0}")]
    Unavailable(String),
}

impl AuthError {
    /// The protocol error code.
    pub fn code(&self) -> &'static str {
        match self {
            AuthError::Unauthorized(_) => "unauthorized",
            AuthError::Forbidden(_) => "forbidden",
            AuthError::Unavailable(_) => "unavailable",
        }
    }
}

/// A decision that may take time: given now, or a future that gives it
/// (a backend asked over the network). A future must end by itself
/// (bound its own wait: the connection's handshake deadline is its last
/// resort); it runs on its own task, so the connection keeps serving its
/// other messages meanwhile.
#[non_exhaustive]
pub enum Verdict<T> {
    /// Decided.
    Now(Result<T, AuthError>),
    /// Decided when this future ends.
    Later(Pin<Box<dyn Future<Output = Result<T, AuthError>> + Send + 'static>>),
}

impl<T> Verdict<T> {
    /// A verdict given when `decision` ends.
    pub fn later(decision: impl Future<Output = Result<T, AuthError>> + Send + 'static) -> Self {
        Verdict::Later(Box::pin(decision))
    }

    /// The same verdict, its allowed value turned by `f`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U + Send + 'static) -> Verdict<U>
    where
        T: 'static,
    {
        match self {
            Verdict::Now(verdict) => Verdict::Now(verdict.map(f)),
            Verdict::Later(decision) => Verdict::later(async move { decision.await.map(f) }),
        }
    }
}

impl<T> std::fmt::Debug for Verdict<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Now(Ok(_)) => "Verdict::Now(Ok)",
            Verdict::Now(Err(_)) => "Verdict::Now(Err)",
            Verdict::Later(_) => "Verdict::Later",
        })
    }
}

/// The application's auth hooks. All methods are called on the connection's
/// task and must not block: a decision that needs I/O is a
/// [`Verdict::Later`] from the `check_*` methods.
///
/// Which hook decides a subscribe or a client publish follows the
/// channel's namespace ([`crate::Access`]): `Grant` asks
/// [`authorize_subscribe`](Self::authorize_subscribe) /
/// [`authorize_publish`](Self::authorize_publish), `Backend` asks
/// [`check_subscribe`](Self::check_subscribe) /
/// [`check_publish`](Self::check_publish), `Token` asks
/// [`check_subscription_token`](Self::check_subscription_token), `Anyone`
/// and `Nobody` ask nobody.
pub trait Authenticator: Send + Sync + 'static {
    /// Check the credentials of a new session.
    fn authenticate(&self, token: Option<&str>) -> Result<Principal, AuthError>;

    /// May `principal` subscribe to `channel`?
    /// The default: a user channel `#USER` only to the principal whose
    /// `user` is USER (whatever its grant; spec/PROTOCOL.md §5.2); any other
    /// channel as the principal's grant ([`Principal::subscribe`]) allows,
    /// and everything without a grant.
    fn authorize_subscribe(&self, principal: &Principal, channel: &str) -> Result<(), AuthError> {
        if let Some(user) = channel.strip_prefix(USER_CHANNEL_PREFIX) {
            if user.is_empty() || user != principal.user {
                return Err(AuthError::Forbidden(format!(
                    "{channel:?} is another user's channel"
                )));
            }
            return Ok(());
        }
        match &principal.subscribe {
            Some(patterns)
                if !ChannelPattern::any_matches(patterns.iter().map(String::as_str), channel) =>
            {
                Err(AuthError::Forbidden(format!(
                    "the token does not allow subscribing to {channel:?}"
                )))
            }
            _ => Ok(()),
        }
    }

    /// May `principal` publish to `channel` from the client (`$publish`)?
    /// The default allows what the principal's publish grant
    /// ([`Principal::publish`]) allows, and nothing without a grant.
    fn authorize_publish(&self, principal: &Principal, channel: &str) -> Result<(), AuthError> {
        match &principal.publish {
            Some(patterns)
                if ChannelPattern::any_matches(patterns.iter().map(String::as_str), channel) =>
            {
                Ok(())
            }
            _ => Err(AuthError::Forbidden(format!(
                "the credentials do not allow publishing to {channel:?}"
            ))),
        }
    }

    /// May `principal` call `method`?
    fn authorize_request(&self, principal: &Principal, method: &str) -> Result<(), AuthError> {
        let _ = (principal, method);
        Ok(())
    }

    /// The credentials of a new session (`connect`), possibly decided
    /// later. The default: [`authenticate`](Self::authenticate), now.
    fn check_connect(&self, token: Option<&str>) -> Verdict<Principal> {
        Verdict::Now(self.authenticate(token))
    }

    /// The new credentials of an open session (`refresh`), possibly
    /// decided later; the server then refuses a principal of another
    /// user. The default: as [`check_connect`](Self::check_connect).
    fn check_refresh(&self, token: &str) -> Verdict<Principal> {
        self.check_connect(Some(token))
    }

    /// May `principal` subscribe to `channel`, in a namespace whose
    /// subscribers the backend decides ([`crate::Access::Backend`])? The
    /// default refuses: no backend was given.
    fn check_subscribe(&self, principal: &Principal, channel: &str) -> Verdict<()> {
        let _ = principal;
        Verdict::Now(Err(AuthError::Forbidden(format!(
            "{channel:?} needs the backend's approval and the server has no backend"
        ))))
    }

    /// May `principal` subscribe to `channel` with the subscription
    /// `token` the client sent (`None`: it sent none), in a namespace whose
    /// subscribers need one ([`crate::Access::Token`]), and for how long:
    /// `Some(d)`, the token expires `d` from now (the client is told with
    /// `sub_expiring`, may send `sub_refresh` with a new one, checked here
    /// too, and the subscription ends at the expiry otherwise:
    /// spec/PROTOCOL.md §5.8); `None`, it does not. The default refuses:
    /// this authenticator issues no subscription tokens.
    fn check_subscription_token(
        &self,
        principal: &Principal,
        channel: &str,
        token: Option<&str>,
    ) -> Verdict<Option<Duration>> {
        let _ = (principal, token);
        Verdict::Now(Err(AuthError::Forbidden(format!(
            "{channel:?} needs a subscription token and the server checks none"
        ))))
    }

    /// May `principal` publish `data` to `channel` from the client, in a
    /// namespace whose publishers the backend decides
    /// ([`crate::Access::Backend`])? The default refuses: no backend was
    /// given.
    fn check_publish(&self, principal: &Principal, channel: &str, data: &Payload) -> Verdict<()> {
        let _ = (principal, data);
        Verdict::Now(Err(AuthError::Forbidden(format!(
            "publishing to {channel:?} needs the backend's approval and the server has no backend"
        ))))
    }
}

/// Lets everyone in as [`Principal::anonymous`]. The default.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Authenticator for AllowAll {
    fn authenticate(&self, _token: Option<&str>) -> Result<Principal, AuthError> {
        Ok(Principal::anonymous())
    }
}

/// The token of an `Authorization: Bearer` header, if there is one.
pub(crate) fn bearer(headers: &axum::http::HeaderMap) -> Option<String> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    value.strip_prefix("Bearer ").map(str::to_owned)
}
