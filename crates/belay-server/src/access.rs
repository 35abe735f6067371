//! Asking the right hook whether a connection may subscribe to a channel
//! (or read its presence or history) or publish to it from the client.
//! The node decides who decides ([`Node::subscribe_access`],
//! [`Node::publish_access`]: user channels, `$presence:`, host channels,
//! the namespace's [`Access`](belay_proto::server::Access)); this module
//! calls the authenticator's hook it names.
//!
//! [`Node::subscribe_access`]: belay_proto::server::Node::subscribe_access
//! [`Node::publish_access`]: belay_proto::server::Node::publish_access

use std::time::Duration;

use belay_proto::message::Payload;
use belay_proto::server::{AccessRoute, Caller};

use crate::auth::{AuthError, Principal, Verdict};
use crate::metrics::lock;
use crate::shared::Shared;

/// What the node knows of `principal`.
pub(crate) fn caller(principal: &Principal) -> Caller<'_> {
    match principal.host.as_deref() {
        Some(host) => Caller::host(host),
        None => Caller::client(),
    }
}

/// May `principal` subscribe to `channel` (or ask for its presence), with
/// the subscription `token` it sent?
pub(crate) fn subscribe(
    shared: &Shared,
    principal: &Principal,
    channel: &str,
    token: Option<&str>,
) -> Verdict<()> {
    subscribe_for(shared, principal, channel, token).map(drop)
}

/// As [`subscribe`], and for how long: `Some(d)` for a subscription token
/// that expires `d` from now (spec/PROTOCOL.md §5.8), `None` otherwise.
pub(crate) fn subscribe_for(
    shared: &Shared,
    principal: &Principal,
    channel: &str,
    token: Option<&str>,
) -> Verdict<Option<Duration>> {
    let route = lock(&shared.node).subscribe_access(caller(principal), channel);
    subscribe_by(shared, principal, route, token)
}

/// Ask what `route` names whether `principal` may subscribe, with the
/// subscription `token` it sent.
pub(crate) fn subscribe_by(
    shared: &Shared,
    principal: &Principal,
    route: AccessRoute,
    token: Option<&str>,
) -> Verdict<Option<Duration>> {
    let auth = &shared.auth;
    let now = |verdict: Result<(), AuthError>| Verdict::Now(verdict.map(|()| None));
    match route {
        AccessRoute::Allowed => Verdict::Now(Ok(None)),
        AccessRoute::Grant { channel } => now(auth.authorize_subscribe(principal, &channel)),
        AccessRoute::Backend { channel } => {
            auth.check_subscribe(principal, &channel).map(|()| None)
        }
        AccessRoute::SubscriptionToken { channel } => {
            auth.check_subscription_token(principal, &channel, token)
        }
        refusal => Verdict::Now(Err(refused(refusal))),
    }
}

/// Ask what `route` names whether `principal` may publish `data`.
pub(crate) fn publish_by(
    shared: &Shared,
    principal: &Principal,
    route: AccessRoute,
    data: &Payload,
) -> Verdict<()> {
    let auth = &shared.auth;
    match route {
        AccessRoute::Allowed => Verdict::Now(Ok(())),
        AccessRoute::Grant { channel } => Verdict::Now(auth.authorize_publish(principal, &channel)),
        AccessRoute::Backend { channel } => auth.check_publish(principal, &channel, data),
        refusal => Verdict::Now(Err(refused(refusal))),
    }
}

/// The error of a route that refuses (`forbidden`); a route this driver
/// does not know (a newer core) refuses too, loudly.
fn refused(route: AccessRoute) -> AuthError {
    match route {
        AccessRoute::Refused { reason } => AuthError::Forbidden(reason),
        other => {
            crate::unhandled::Unhandled::new("access route", &other).report();
            AuthError::Forbidden("refused".into())
        }
    }
}

/// The verdict, waiting for it if it comes later.
pub(crate) async fn settle<T>(verdict: Verdict<T>) -> Result<T, AuthError> {
    match verdict {
        Verdict::Now(decided) => decided,
        Verdict::Later(decision) => decision.await,
    }
}
