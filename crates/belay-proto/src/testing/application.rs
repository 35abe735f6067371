//! What the server's application answers in a [`Pair`](super::Pair): the
//! authenticator (every credential good, for a lifetime if one is set), the
//! authorizer (every subscribe allowed; a subscription token good for a
//! lifetime if one is set) and the methods (`echo`, `slow`).

use std::time::Duration;

use crate::message::{ErrorBody, Payload, RawJson, Reply};
use crate::server::AuthVerdict;
use crate::time::Instant;

/// The server's application: how long credentials last, and its methods.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Application {
    /// How long an accepted credential (in `connect` or `refresh`) lasts
    /// from the moment it is checked; `None`: for ever.
    pub credential_lifetime: Option<Duration>,
    /// How long a subscription token (sent with a subscribe or a
    /// `sub_refresh`) lasts from the moment it is checked; `None`: for
    /// ever. Subscribes without a token never expire.
    pub subscription_token_lifetime: Option<Duration>,
}

/// How the application answers a call.
pub(super) enum Answer {
    /// At once.
    Now(Reply),
    /// After this long.
    After(Duration, Reply),
}

impl Application {
    /// The verdict on a credential checked at `now`.
    pub(super) fn verdict(&self, now: Instant) -> AuthVerdict {
        AuthVerdict::Accepted {
            expires_at: self.credential_lifetime.map(|d| now.saturating_add(d)),
            pacing: None,
        }
    }

    /// The verdict on a subscribe (`token`: the subscription token it
    /// carried) or on a `sub_refresh`'s token: allowed, for how long.
    pub(super) fn subscription(&self, token: Option<&str>) -> Result<Option<Duration>, ErrorBody> {
        Ok(token.and(self.subscription_token_lifetime))
    }

    /// The methods: `echo` answers its params at once, `slow` answers its
    /// params (a number of milliseconds) after that long; anything else is
    /// `unknown_method`.
    pub(super) fn call(&self, method: &str, params: &Payload) -> Answer {
        match method {
            "echo" => Answer::Now(Reply::Result(RawJson::from_value(params))),
            "slow" => {
                let ms = params.as_u64().unwrap_or(0);
                let reply = Reply::Result(RawJson::from_value(params));
                Answer::After(Duration::from_millis(ms), reply)
            }
            _ => Answer::Now(Reply::Error(ErrorBody::new(
                "unknown_method",
                "no such method",
            ))),
        }
    }
}
