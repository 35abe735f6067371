//! Session configuration: `Default` plus setters.

use std::time::Duration;

use crate::backoff::BackoffPolicy;

/// How a [`Session`](crate::Session) behaves. Start from `Config::default()`
/// and change what you need:
///
/// ```
/// use std::time::Duration;
/// use belay_proto::{backoff::BackoffPolicy, Config};
///
/// let mut config = Config::default();
/// config
///     .set_backoff(BackoffPolicy::equal_jitter(Duration::from_millis(500), Duration::from_secs(30)))
///     .set_max_attempts(Some(8))
///     .set_reset_after(Duration::from_secs(10));
/// assert_eq!(config.max_attempts(), Some(8));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    backoff: BackoffPolicy,
    max_attempts: Option<u32>,
    reset_after: Duration,
    connect_timeout: Duration,
    probe_interval: Duration,
    probe_timeout: Duration,
    request_timeout: Duration,
    subscribe_timeout: Duration,
    resubscribe_backoff: BackoffPolicy,
    online_delay: Duration,
    unreachable_retry: BackoffPolicy,
    token: Option<String>,
    token_provider: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            backoff: BackoffPolicy::default(),
            max_attempts: None,
            reset_after: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(10),
            probe_interval: Duration::from_secs(10),
            probe_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
            subscribe_timeout: Duration::from_secs(5),
            resubscribe_backoff: BackoffPolicy::equal_jitter(
                Duration::from_millis(500),
                Duration::from_secs(2),
            ),
            online_delay: Duration::from_secs(1),
            unreachable_retry: BackoffPolicy::equal_jitter(
                Duration::from_secs(1),
                Duration::from_secs(2),
            ),
            token: None,
            token_provider: false,
        }
    }
}

macro_rules! setting {
    ($(#[$doc:meta])* $field:ident, $setter:ident, $ty:ty) => {
        $(#[$doc])*
        pub fn $field(&self) -> $ty {
            self.$field.clone()
        }

        $(#[$doc])*
        pub fn $setter(&mut self, value: $ty) -> &mut Self {
            self.$field = value;
            self
        }
    };
}

impl Config {
    setting!(
        /// Reconnect backoff policy. Default: server-paced, falling back to
        /// equal jitter 1–30 s (see [`BackoffPolicy::default`]).
        backoff, set_backoff, BackoffPolicy
    );
    setting!(
        /// Automatic reconnects in a row (each after a backoff delay) after
        /// which the session halts instead of scheduling another, and waits
        /// for `start`/`reconnect_now`. With `Some(m)` a session started
        /// against a dead server dials `1 + m` times. The count restarts when
        /// the backoff resets. Default: `None` (never halts).
        max_attempts, set_max_attempts, Option<u32>
    );
    setting!(
        /// How long the session must stay **ready** before the backoff resets.
        /// Resetting on open would let a server that accepts and immediately
        /// drops connections be hammered. Default: 5 s.
        reset_after, set_reset_after, Duration
    );
    setting!(
        /// Bound on opening the transport, and separately on receiving
        /// `welcome` after it opened. Default: 10 s.
        connect_timeout, set_connect_timeout, Duration
    );
    setting!(
        /// Quiet time after which the client probes with `ping`. Default: 10 s.
        probe_interval, set_probe_interval, Duration
    );
    setting!(
        /// How long a probe may go unanswered (by anything) before the
        /// connection is declared dead. Default: 10 s.
        probe_timeout, set_probe_timeout, Duration
    );
    setting!(
        /// Deadline of a request that does not set its own. Default: 10 s.
        request_timeout, set_request_timeout, Duration
    );
    setting!(
        /// How long to wait for `subscribed` before repeating the subscribe
        /// on the same transport. Default: 5 s; at least 100 ms
        /// ([`MIN_CONFIRM_TIMEOUT`](crate::client::subscriptions::MIN_CONFIRM_TIMEOUT)).
        subscribe_timeout, set_subscribe_timeout, Duration
    );
    setting!(
        /// Pacing of re-subscribes after `unsubscribed`. Default: equal jitter
        /// 500 ms–2 s, so data flows again within ~2 s of the service returning.
        resubscribe_backoff, set_resubscribe_backoff, BackoffPolicy
    );
    setting!(
        /// When the device comes back online, dial after a random delay in
        /// `[0, online_delay)` so a fleet does not dial in lockstep. Default: 1 s.
        online_delay, set_online_delay, Duration
    );
    setting!(
        /// Pacing of retries after [`Failure::Unreachable`](crate::Failure::Unreachable)
        /// (this device has no route to the server). Those attempts never
        /// reach the server, so they use this short schedule instead of the
        /// backoff and come back within ~2 s of the network returning.
        /// Default: equal jitter 1–2 s (first 0.5–1 s, then 1–2 s).
        unreachable_retry, set_unreachable_retry, BackoffPolicy
    );
    setting!(
        /// Credentials sent in `connect`. Default: none.
        token, set_token, Option<String>
    );
    setting!(
        /// The application answers [`Event::TokenWanted`](crate::Event::TokenWanted)
        /// before a dial too (spec/PROTOCOL.md §2.8): with it, a dial asks
        /// for a token first when there is none, the server refused the
        /// last one, or it is near its expiry, and a refused token that did
        /// not come fresh from the provider is replaced instead of halting.
        /// Default: false (the token is the application's to set).
        token_provider, set_token_provider, bool
    );
}
