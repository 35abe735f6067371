//! Who decides whether a connection may subscribe to a channel or publish
//! to it from the client: the channel's namespace ([`Access`]), then the
//! authenticator's hook it names. A user channel (`#USER`) is always its
//! user's alone, whatever the namespace says. The host channels
//! (docs/HOSTS.md) have fixed rules too: only the host `ID` holds
//! `$host-calls:ID` and publishes to `$host:ID`; `$host-state:ID` is
//! authorized as `$host:ID`, and published by the relay alone.

use std::time::Duration;

use belay_proto::host::{is_host_channel, HostChannel, HOST_CHANNEL_PREFIX};
use belay_proto::message::Payload;
use belay_proto::server::{is_reserved_channel, Access};

use crate::auth::{AuthError, Principal, Verdict, USER_CHANNEL_PREFIX};
use crate::shared::Shared;

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
    let auth = &shared.auth;
    let now = |verdict: Result<(), AuthError>| Verdict::Now(verdict.map(|()| None));
    if channel.starts_with(USER_CHANNEL_PREFIX) {
        return now(auth.authorize_subscribe(principal, channel));
    }
    if is_host_channel(channel) {
        match HostChannel::parse(channel) {
            Some(HostChannel::Calls(host)) if principal.is_host(host) => {
                return Verdict::Now(Ok(None))
            }
            Some(HostChannel::State(host)) => {
                let data = format!("{HOST_CHANNEL_PREFIX}{host}");
                return subscribe_for(shared, principal, &data, token);
            }
            Some(HostChannel::Data(_)) => {}
            _ => {
                return Verdict::Now(Err(AuthError::Forbidden(format!(
                    "{channel:?} is not a channel a client may subscribe to"
                ))))
            }
        }
    }
    match shared.config.namespaces.options_for(channel).subscribe {
        Access::Anyone => Verdict::Now(Ok(None)),
        Access::Nobody => Verdict::Now(Err(AuthError::Forbidden(format!(
            "no client may subscribe to {channel:?}"
        )))),
        Access::Backend => auth.check_subscribe(principal, channel).map(|()| None),
        Access::Token => auth.check_subscription_token(principal, channel, token),
        _ => now(auth.authorize_subscribe(principal, channel)),
    }
}

/// May `principal` publish `data` to `channel` from the client?
pub(crate) fn publish(
    shared: &Shared,
    principal: &Principal,
    channel: &str,
    data: &Payload,
) -> Verdict<()> {
    let auth = &shared.auth;
    let namespaces = &shared.config.namespaces;
    let access = if channel.starts_with(USER_CHANNEL_PREFIX) {
        // A user channel is the server's (and the HTTP API's) to write: a
        // client publish needs a rule that covers it and allows it, so a
        // wide publish grant (`*`) never writes into another user's
        // channel by default, and a rule's `nobody` holds whatever the grant.
        namespaces
            .rule_for(channel)
            .map_or(Access::Nobody, |o| o.publish)
    } else {
        namespaces.options_for(channel).publish
    };
    if is_host_channel(channel) {
        return Verdict::Now(match HostChannel::parse(channel) {
            Some(HostChannel::Data(host)) if principal.is_host(host) => Ok(()),
            _ => Err(AuthError::Forbidden(format!(
                "only its host publishes to {channel:?}"
            ))),
        });
    }
    // Every other `$` channel is the server's (presence, and whatever it
    // adds later): no grant, rule or backend may open it to clients.
    if is_reserved_channel(channel) {
        return Verdict::Now(Err(AuthError::Forbidden(format!(
            "{channel:?} is a server channel: only the server publishes to it"
        ))));
    }
    match access {
        Access::Anyone => Verdict::Now(Ok(())),
        Access::Nobody | Access::Token => Verdict::Now(Err(AuthError::Forbidden(format!(
            "no client may publish to {channel:?}"
        )))),
        Access::Backend => auth.check_publish(principal, channel, data),
        _ => Verdict::Now(auth.authorize_publish(principal, channel)),
    }
}

/// The verdict, waiting for it if it comes later.
pub(crate) async fn settle<T>(verdict: Verdict<T>) -> Result<T, AuthError> {
    match verdict {
        Verdict::Now(decided) => decided,
        Verdict::Later(decision) => decision.await,
    }
}
