//! Who decides whether a connection may subscribe to a channel (or read
//! its presence or history) or publish to it from the client: fixed rules
//! first, then the channel's namespace ([`Access`]), which names the
//! authenticator's hook ([`AccessRoute`]).
//!
//! - A user channel (`#USER`) is its user's alone, whatever the namespace
//!   says: subscribing goes to the caller's grant (which checks the user);
//!   publishing needs a namespace rule that covers the channel and allows
//!   it, so a wide grant (`*`) never writes into another user's channel.
//! - `$presence:X` is read as `X`.
//! - The host channels (docs/HOSTS.md): only the host `ID` holds
//!   `$host-calls:ID` and publishes to `$host:ID`; `$host-state:ID` is
//!   read as `$host:ID` and published by the relay alone.
//! - Every other `$` channel is the server's: no client publishes to it.

use super::presence::PRESENCE_CHANNEL_PREFIX;
use super::Node;
use crate::host::{is_host_channel, HostChannel, HOST_CHANNEL_PREFIX};
use crate::server::{is_reserved_channel, Access};

/// The prefix of a user's own channel (`#alice`).
pub const USER_CHANNEL_PREFIX: char = '#';

/// What the node knows of the caller when routing a decision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller<'a> {
    /// The resident host the caller's credentials name, if any.
    pub host: Option<&'a str>,
}

impl<'a> Caller<'a> {
    /// A caller that is no host.
    pub fn client() -> Self {
        Caller { host: None }
    }

    /// The resident host `id`.
    pub fn host(id: &'a str) -> Self {
        Caller { host: Some(id) }
    }

    fn is_host(&self, id: &str) -> bool {
        self.host == Some(id)
    }
}

/// Who decides a subscribe or a client publish.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AccessRoute {
    /// Allowed by the rules; nobody else is asked.
    Allowed,
    /// Refused by the rules (`forbidden`, with this message).
    Refused {
        /// Why, for the client.
        reason: String,
    },
    /// The caller's own grants decide, on `channel` (the authenticator's
    /// synchronous `authorize_subscribe` / `authorize_publish`).
    Grant {
        /// The channel to check.
        channel: String,
    },
    /// The application's backend decides, on `channel`
    /// (`check_subscribe` / `check_publish`).
    Backend {
        /// The channel to check.
        channel: String,
    },
    /// The subscription token sent with the subscribe decides, on
    /// `channel` (`check_subscription_token`).
    SubscriptionToken {
        /// The channel to check.
        channel: String,
    },
}

impl Node {
    /// Who decides whether `caller` may subscribe to `channel` (or read its
    /// presence or history).
    pub fn subscribe_access(&self, caller: Caller<'_>, channel: &str) -> AccessRoute {
        let channel = channel
            .strip_prefix(PRESENCE_CHANNEL_PREFIX)
            .unwrap_or(channel);
        if channel.starts_with(USER_CHANNEL_PREFIX) {
            return AccessRoute::Grant {
                channel: channel.to_owned(),
            };
        }
        if is_host_channel(channel) {
            match HostChannel::parse(channel) {
                Some(HostChannel::Calls(host)) if caller.is_host(host) => {
                    return AccessRoute::Allowed
                }
                Some(HostChannel::State(host)) => {
                    let data = format!("{HOST_CHANNEL_PREFIX}{host}");
                    return self.subscribe_access(caller, &data);
                }
                Some(HostChannel::Data(_)) => {}
                _ => {
                    return refused(format!(
                        "{channel:?} is not a channel a client may subscribe to"
                    ))
                }
            }
        }
        let channel = channel.to_owned();
        match self.config.namespaces().options_for(&channel).subscribe {
            Access::Anyone => AccessRoute::Allowed,
            Access::Nobody => refused(format!("no client may subscribe to {channel:?}")),
            Access::Backend => AccessRoute::Backend { channel },
            Access::Token => AccessRoute::SubscriptionToken { channel },
            _ => AccessRoute::Grant { channel },
        }
    }

    /// Who decides whether `caller` may publish to `channel` from the client.
    pub fn publish_access(&self, caller: Caller<'_>, channel: &str) -> AccessRoute {
        if is_host_channel(channel) {
            return match HostChannel::parse(channel) {
                Some(HostChannel::Data(host)) if caller.is_host(host) => AccessRoute::Allowed,
                _ => refused(format!("only its host publishes to {channel:?}")),
            };
        }
        if is_reserved_channel(channel) {
            return refused(format!(
                "{channel:?} is a server channel: only the server publishes to it"
            ));
        }
        let namespaces = self.config.namespaces();
        let access = if channel.starts_with(USER_CHANNEL_PREFIX) {
            namespaces
                .rule_for(channel)
                .map_or(Access::Nobody, |options| options.publish)
        } else {
            namespaces.options_for(channel).publish
        };
        let channel = channel.to_owned();
        match access {
            Access::Anyone => AccessRoute::Allowed,
            Access::Nobody | Access::Token => {
                refused(format!("no client may publish to {channel:?}"))
            }
            Access::Backend => AccessRoute::Backend { channel },
            _ => AccessRoute::Grant { channel },
        }
    }
}

fn refused(reason: String) -> AccessRoute {
    AccessRoute::Refused { reason }
}
