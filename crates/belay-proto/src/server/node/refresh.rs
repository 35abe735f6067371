//! The rules of a `refresh` (spec/PROTOCOL.md §2.8): the new credentials
//! must name the same user and the same host (a host session holds its
//! host's calls channel: new credentials may not make it another host, nor
//! a host of a session that was not one, nor the reverse); the session then
//! takes their grants, and keeps only the subscriptions those grants
//! allow, so a refreshed session never holds more than a new connection
//! with the same token could. Subscriptions judged at their subscribe by
//! the backend or a subscription token are kept: the grants never decided
//! them.

use super::{AccessRoute, Caller, Node};

/// Whose credentials a session holds, or a refresh brings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Identity<'a> {
    /// The user.
    pub user: &'a str,
    /// The resident host, if the credentials name one.
    pub host: Option<&'a str>,
}

impl<'a> Identity<'a> {
    /// `user`, and `host` if any.
    pub fn new(user: &'a str, host: Option<&'a str>) -> Self {
        Identity { user, host }
    }
}

impl Node {
    /// May a session of `held` take credentials naming `new`? The reason
    /// of the refusal (close 4001) otherwise.
    pub fn check_refresh(&self, held: Identity<'_>, new: Identity<'_>) -> Result<(), &'static str> {
        if held.user != new.user {
            return Err("the refreshed token names another user");
        }
        if held.host != new.host {
            return Err("the refreshed token names another host");
        }
        Ok(())
    }

    /// After a refresh, who decides whether the session may keep holding
    /// `channel`: `None` when it is kept whatever the new grants say (the
    /// backend or a subscription token judged it); otherwise the route to
    /// ask, as for a new subscribe.
    pub fn regrant_route(&self, caller: Caller<'_>, channel: &str) -> Option<AccessRoute> {
        match self.subscribe_access(caller, channel) {
            AccessRoute::Backend { .. } | AccessRoute::SubscriptionToken { .. } => None,
            route => Some(route),
        }
    }
}
